/**
 * The container and Kubernetes artifacts (issue "Production hardening", item 7). Without building
 * the image (npm run test:container does) or a cluster, this reads the Dockerfile and the manifests
 * and checks the points a deployment relies on: the image's base, users, ports, health check and config path; the
 * probes, shutdown timing, config mount and secret of the Deployment; the Service, PDB and HPA; and
 * the ConfigMap's gateway.yaml against the gateway's own schema. image-and-manifests-agree.test.ts
 * checks the two against each other, kubernetes-manifests-validate.test.ts against the API schemas.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { readArtifacts } from "../helpers/deployment-artifacts.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CONFIG_PATH = "/etc/gateway/gateway.yaml";

const {
  dockerfile,
  runtimeInstructions,
  only,
  deployment,
  podSpec,
  container,
  configMap,
  config,
  containerPort,
} = readArtifacts(ROOT);
const runtime = dockerfile.stages.at(-1);

describe("Dockerfile", () => {
  it("is multi-stage, every stage on a Node.js 22 or 24 LTS image", () => {
    expect(dockerfile.stages.length).toBeGreaterThanOrEqual(2);
    const stageNames = new Set(dockerfile.stages.map((s) => s.name));
    for (const stage of dockerfile.stages) {
      if (stageNames.has(stage.image)) continue; // FROM an earlier stage
      expect(stage.image).toMatch(/^(docker\.io\/(library\/)?)?node:(22|24)([.-]|$)/);
    }
  });

  it("builds with dev dependencies and installs only production ones in the runtime stage", () => {
    const buildRuns = dockerfile.stages
      .slice(0, -1)
      .flatMap((s) => s.instructions.filter((i) => i.keyword === "RUN").map((i) => i.args));
    expect(buildRuns.some((r) => /npm ci\b/.test(r) && !r.includes("--omit=dev"))).toBe(true);
    expect(buildRuns.some((r) => /npm run build\b/.test(r))).toBe(true);

    const installs = runtimeInstructions("RUN").filter((r) => /npm (ci|install)\b/.test(r));
    expect(installs.length).toBeGreaterThan(0);
    for (const r of installs) {
      expect(r).toContain("--omit=dev");
      // `prepare` runs the tsc build, which needs the dev dependencies this stage lacks.
      expect(r).toContain("--ignore-scripts");
    }
    const copies = runtimeInstructions("COPY");
    expect(copies.some((c) => /^--from=\S+\s+\S*dist\b/.test(c))).toBe(true);
    expect(copies.some((c) => /package-lock\.json/.test(c))).toBe(true);
  });

  it("runs as a non-root user", () => {
    const users = runtimeInstructions("USER");
    const user = users.at(-1);
    expect(user, "the runtime stage sets no USER").toBeDefined();
    expect(user?.split(":")[0]).not.toMatch(/^(root|0)$/);
    // The USER must come before the CMD it applies to.
    const keywords = (runtime?.instructions ?? []).map((i) => i.keyword);
    expect(keywords.lastIndexOf("USER")).toBeLessThan(keywords.lastIndexOf("CMD"));
  });

  it("exposes the API and admin ports", () => {
    const ports = runtimeInstructions("EXPOSE").flatMap((e) =>
      e.split(/\s+/).map((p) => p.replace(/\/tcp$/, "")),
    );
    expect(ports).toEqual(expect.arrayContaining(["8080", "9090"]));
  });

  it("has a HEALTHCHECK on the admin listener's /healthz that works without curl", () => {
    const checks = runtimeInstructions("HEALTHCHECK");
    expect(checks).toHaveLength(1);
    const check = checks[0] ?? "";
    expect(check).toMatch(/\bCMD\b/);
    expect(check).toMatch(/127\.0\.0\.1:9090\/healthz|localhost:9090\/healthz/);
    expect(check).not.toMatch(/\b(curl|wget)\b/); // not in the slim image
    expect(check).toMatch(/\bnode\b/);
  });

  it("reads its config from /etc/gateway/gateway.yaml, runs the built CLI and stops on SIGTERM", () => {
    const env = runtimeInstructions("ENV").join(" ");
    expect(env).toMatch(new RegExp(`GATEWAY_CONFIG=${CONFIG_PATH}\\b`));
    expect(env).toMatch(/NODE_ENV=production\b/);
    const cmd = runtimeInstructions("CMD").at(-1) ?? "";
    const argv = JSON.parse(cmd) as unknown;
    expect(argv).toEqual(["node", "dist/gateway/main.js", "start", "--config", CONFIG_PATH]);
    expect(runtimeInstructions("STOPSIGNAL").at(-1)).toBe("SIGTERM");
  });

  it("keeps node_modules, dist and .git out of the build context", () => {
    const ignored = readFileSync(path.join(ROOT, ".dockerignore"), "utf8")
      .split("\n")
      .map((l) => l.trim().replace(/^\/|\/$/g, ""))
      .filter((l) => l !== "" && !l.startsWith("#"));
    expect(ignored).toEqual(expect.arrayContaining(["node_modules", "dist", ".git"]));
  });
});

// ---------------------------------------------------------------------------------------------
// Kubernetes manifests

const gatewayYaml = configMap.data["gateway.yaml"] ?? "";

/** Seconds the preStop hook holds the pod before SIGTERM. */
function preStopSeconds(): number {
  const preStop = container.lifecycle?.preStop;
  if (preStop?.sleep !== undefined) return preStop.sleep.seconds;
  const command = preStop?.exec?.command.join(" ") ?? "";
  const m = /\bsleep\s+(\d+(?:\.\d+)?)\b/.exec(command);
  return m === null ? Number.NaN : Number(m[1]);
}

function matches(selector: Record<string, string>, labels: Record<string, string> | undefined): boolean {
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

describe("config/kubernetes", () => {
  it("ships a gateway.yaml that the gateway's schema accepts, on Redis Cluster, failing open", () => {
    const redis = config.rate_limits.store.redis;
    expect(redis?.cluster?.length).toBeGreaterThanOrEqual(3);
    for (const node of redis?.cluster ?? []) expect(node).toMatch(/^rediss?:\/\//);
    expect(config.rate_limits.failure_mode).toBe("open");
    expect(config.auth.introspection?.client_secret).toBe("test-secret"); // from ${INTROSPECTION_CLIENT_SECRET}
    expect(gatewayYaml).toContain("${INTROSPECTION_CLIENT_SECRET}");
  });

  it("runs replicated pods whose selector matches their labels", () => {
    expect(deployment.spec.replicas).toBeGreaterThanOrEqual(3);
    expect(matches(deployment.spec.selector.matchLabels, deployment.spec.template.metadata.labels)).toBe(
      true,
    );
    expect(podSpec.containers).toHaveLength(1);
  });

  it("exposes the configured API and admin ports", () => {
    expect(containerPort("http")).toBe(config.listen.port);
    expect(containerPort("admin")).toBe(config.admin.port);
  });

  it("probes readiness on /readyz and liveness on /healthz of the admin listener", () => {
    expect(container.readinessProbe?.httpGet?.path).toBe("/readyz");
    expect(containerPort(container.readinessProbe?.httpGet?.port)).toBe(config.admin.port);
    expect(container.livenessProbe?.httpGet?.path).toBe("/healthz");
    expect(containerPort(container.livenessProbe?.httpGet?.port)).toBe(config.admin.port);
  });

  it("waits before SIGTERM and gives the gateway its whole grace period before SIGKILL", () => {
    const preStopS = preStopSeconds();
    expect(preStopS, "lifecycle.preStop must sleep (exec sleep N or sleep.seconds)").toBeGreaterThan(0);
    const graceS = config.listen.grace_ms / 1000;
    expect(podSpec.terminationGracePeriodSeconds).toBeDefined();
    expect(podSpec.terminationGracePeriodSeconds ?? 0).toBeGreaterThan(preStopS + graceS);
  });

  it("mounts the ConfigMap at /etc/gateway and takes the client secret from a Secret", () => {
    const mount = container.volumeMounts?.find((m) => m.mountPath === path.posix.dirname(CONFIG_PATH));
    expect(mount, "a volume mounted at /etc/gateway").toBeDefined();
    const volume = podSpec.volumes?.find((v) => v.name === mount?.name);
    expect(volume?.configMap?.name).toBe(configMap.metadata.name);
    const item = volume?.configMap?.items?.find((i) => i.key === "gateway.yaml");
    if (volume?.configMap?.items !== undefined) expect(item?.path).toBe(path.posix.basename(CONFIG_PATH));

    const env = new Map((container.env ?? []).map((e) => [e.name, e]));
    const gatewayConfig = env.get("GATEWAY_CONFIG");
    if (gatewayConfig !== undefined) expect(gatewayConfig.value).toBe(CONFIG_PATH);
    const secret = env.get("INTROSPECTION_CLIENT_SECRET");
    expect(secret?.value, "the secret must not be inlined").toBeUndefined();
    expect(secret?.valueFrom?.secretKeyRef?.name).toBeTruthy();
  });

  it("runs non-root with a read-only root filesystem and sized resources", () => {
    expect(container.securityContext?.runAsNonRoot ?? podSpec.securityContext?.runAsNonRoot).toBe(true);
    expect(container.securityContext?.readOnlyRootFilesystem).toBe(true);
    expect(container.securityContext?.allowPrivilegeEscalation).toBe(false);
    expect(container.resources?.requests?.cpu, "the HPA's CPU target needs a CPU request").toBeTruthy();
    expect(container.resources?.requests?.memory).toBeTruthy();
    expect(container.resources?.limits?.memory).toBeTruthy();
  });

  it("asks Prometheus to scrape /metrics on the admin port", () => {
    const a = deployment.spec.template.metadata.annotations ?? {};
    expect(a["prometheus.io/scrape"]).toBe("true");
    expect(Number(a["prometheus.io/port"])).toBe(config.admin.port);
    expect(a["prometheus.io/path"]).toBe("/metrics");
  });

  it("has a Service selecting the pods and targeting the API and admin ports", () => {
    const service = only("Service");
    expect(matches(service.spec.selector, deployment.spec.template.metadata.labels)).toBe(true);
    const targets = service.spec.ports.map((p) => containerPort(p.targetPort ?? p.port));
    expect(targets).toContain(config.listen.port);
    expect(targets).toContain(config.admin.port);
  });

  it("has a PodDisruptionBudget that keeps all but one pod up", () => {
    const pdb = only("PodDisruptionBudget");
    expect(pdb.apiVersion).toBe("policy/v1");
    expect(matches(pdb.spec.selector.matchLabels, deployment.spec.template.metadata.labels)).toBe(true);
    const minReplicas = only("HorizontalPodAutoscaler").spec.minReplicas ?? 1;
    if (pdb.spec.maxUnavailable !== undefined) {
      expect(pdb.spec.maxUnavailable).toBe(1);
    } else {
      expect(typeof pdb.spec.minAvailable).toBe("number");
      // A drain must still be possible at the smallest size.
      expect(pdb.spec.minAvailable as number).toBeLessThan(minReplicas);
      expect(pdb.spec.minAvailable as number).toBeGreaterThanOrEqual(2);
    }
  });

  it("follows its ConfigMap without a signal: reload.watch is on", () => {
    expect(config.reload.watch).toBe(true);
  });

  it("requests a CPU per worker and sets no CPU limit (throttling stalls a busy pod)", () => {
    expect(typeof config.workers, "workers: auto counts the node's CPUs in a pod").toBe("number");
    const cpu = container.resources?.requests?.cpu ?? "0";
    const millicores = cpu.endsWith("m") ? Number(cpu.slice(0, -1)) : Number(cpu) * 1000;
    expect(millicores).toBeGreaterThanOrEqual((config.workers as number) * 1000);
    expect(container.resources?.limits?.cpu).toBeUndefined();
  });

  it("has a NetworkPolicy that keeps the admin port to the monitoring and admin tools' namespaces", () => {
    const policy = only("NetworkPolicy");
    const labels = deployment.spec.template.metadata.labels;
    expect(matches(policy.spec.podSelector.matchLabels ?? {}, labels)).toBe(true);
    expect(policy.spec.policyTypes).toContain("Ingress");
    const rules = policy.spec.ingress ?? [];
    const port = (p: number | string | undefined) => containerPort(p);
    const admitting = (target: number) =>
      rules.filter((r) => r.ports === undefined || r.ports.some((p) => port(p.port) === target));
    const admin = admitting(config.admin.port);
    expect(admin.length).toBeGreaterThan(0);
    for (const rule of admin) {
      expect(rule.from, "a rule admitting the admin port must name its sources").toBeDefined();
      for (const from of rule.from ?? []) {
        expect(from.podSelector).toBeUndefined();
        // Prometheus, and the support tools that call /usage and /overrides (SPEC §21).
        expect(["monitoring", "gateway-admin"]).toContain(
          from.namespaceSelector?.matchLabels?.["kubernetes.io/metadata.name"],
        );
        expect(Object.keys(from.namespaceSelector?.matchLabels ?? {})).toEqual([
          "kubernetes.io/metadata.name",
        ]);
      }
    }
    // The API port is open to every client.
    expect(admitting(config.listen.port).some((r) => r.from === undefined)).toBe(true);
  });

  it("keeps the decision port to the edge proxy's namespace (it trusts X-Forwarded-*/X-Original-*)", () => {
    const policy = only("NetworkPolicy");
    const decisionPort = containerPort("decision");
    expect(decisionPort, "the Deployment names its decision port").toBe(8081);
    const rules = (policy.spec.ingress ?? []).filter(
      (r) => r.ports === undefined || r.ports.some((p) => containerPort(p.port) === decisionPort),
    );
    expect(rules.length).toBeGreaterThan(0);
    for (const rule of rules) {
      expect(rule.from, "a rule admitting the decision port must name its sources").toBeDefined();
      for (const from of rule.from ?? []) {
        expect(from.podSelector).toBeUndefined();
        expect(from.namespaceSelector?.matchLabels).toEqual({
          "kubernetes.io/metadata.name": "ingress-nginx",
        });
      }
    }
  });

  it("has a CPU HorizontalPodAutoscaler on the Deployment, its floor matching expected_replicas", () => {
    const hpa = only("HorizontalPodAutoscaler");
    expect(hpa.apiVersion).toBe("autoscaling/v2");
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: "Deployment", name: deployment.metadata.name });
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
    expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas ?? 1);
    const cpu = hpa.spec.metrics?.find((m) => m.type === "Resource" && m.resource?.name === "cpu");
    expect(cpu?.resource?.target.type).toBe("Utilization");
    expect(cpu?.resource?.target.averageUtilization).toBeGreaterThan(0);
    // Failing open divides each limit by expected_replicas; the usual replica count is the floor.
    expect(config.rate_limits.expected_replicas).toBe(hpa.spec.minReplicas);
  });
});
