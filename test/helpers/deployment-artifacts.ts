/**
 * Reading the deployment artifacts for tests: the Dockerfile split into stages and instructions, and
 * the YAML documents of config/kubernetes with the shapes the tests rely on.
 */
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import { parseConfig } from "../../gateway/config/load.js";
import type { GatewayConfig } from "../../gateway/config/schema.js";

export interface Instruction {
  keyword: string;
  args: string;
}

export interface Stage {
  image: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** Joins `\` continuations, drops comments and parser directives, splits into stages. */
export function parseDockerfile(text: string): { args: Map<string, string>; stages: Stage[] } {
  const logical: string[] = [];
  let pending = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (pending === "" && (line === "" || line.startsWith("#"))) continue;
    if (line.startsWith("#")) continue; // comment inside a continuation
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    logical.push(pending + line);
    pending = "";
  }
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const line of logical) {
    const m = /^(\S+)\s*(.*)$/.exec(line);
    if (m === null) continue;
    const keyword = (m[1] ?? "").toUpperCase();
    const rest = m[2] ?? "";
    if (keyword === "FROM") {
      const from = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest);
      if (from === null) throw new Error(`unparsable FROM: ${line}`);
      const image = (from?.[1] ?? "").replace(/\$\{?(\w+)\}?/g, (_s, name: string) => args.get(name) ?? "");
      stages.push({ image, name: from?.[2], instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (stage === undefined) {
      if (keyword === "ARG") {
        const [name, value = ""] = rest.split("=", 2);
        args.set((name ?? "").trim(), value.trim());
      }
      continue;
    }
    stage.instructions.push({ keyword, args: rest });
  }
  return { args, stages };
}

/** Every YAML document with a `kind` in `dir`'s .yaml/.yml files; throws on a YAML error. */
export function loadManifestFiles(
  dir: string,
): { file: string; index: number; doc: Record<string, unknown> }[] {
  const out: { file: string; index: number; doc: Record<string, unknown> }[] = [];
  for (const file of readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))) {
    parseAllDocuments(readFileSync(path.join(dir, file), "utf8")).forEach((doc, index) => {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join("; ")}`);
      const value = doc.toJS() as unknown;
      if (value !== null && typeof value === "object" && "kind" in value) {
        out.push({ file, index, doc: value as Record<string, unknown> });
      }
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The parts of the Kubernetes objects the tests read (kubernetes-models validates the rest).

export interface Metadata {
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
export interface HttpGetProbe {
  httpGet?: { path: string; port: number | string };
}
export interface ContainerPort {
  name?: string;
  containerPort: number;
}
export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  ports?: ContainerPort[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  readinessProbe?: HttpGetProbe;
  livenessProbe?: HttpGetProbe;
  startupProbe?: HttpGetProbe;
  lifecycle?: { preStop?: { exec?: { command: string[] }; sleep?: { seconds: number } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    runAsNonRoot?: boolean;
    runAsUser?: number;
    runAsGroup?: number;
  };
}
export interface Deployment {
  kind: "Deployment";
  metadata: Metadata;
  spec: {
    replicas?: number;
    selector: { matchLabels: Record<string, string> };
    template: {
      metadata: Metadata;
      spec: {
        terminationGracePeriodSeconds?: number;
        securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; runAsGroup?: number };
        containers: Container[];
        volumes?: {
          name: string;
          configMap?: { name: string; items?: { key: string; path: string }[] };
          emptyDir?: Record<string, unknown>;
        }[];
      };
    };
  };
}
export interface Service {
  kind: "Service";
  metadata: Metadata;
  spec: {
    selector: Record<string, string>;
    ports: { name?: string; port: number; targetPort?: number | string }[];
  };
}
export interface PodDisruptionBudget {
  kind: "PodDisruptionBudget";
  apiVersion: string;
  metadata: Metadata;
  spec: {
    minAvailable?: number | string;
    maxUnavailable?: number | string;
    selector: { matchLabels: Record<string, string> };
  };
}
export interface HorizontalPodAutoscaler {
  kind: "HorizontalPodAutoscaler";
  apiVersion: string;
  metadata: Metadata;
  spec: {
    scaleTargetRef: { apiVersion: string; kind: string; name: string };
    minReplicas?: number;
    maxReplicas: number;
    metrics?: {
      type: string;
      resource?: { name: string; target: { type: string; averageUtilization?: number } };
    }[];
  };
}
export interface ConfigMap {
  kind: "ConfigMap";
  metadata: Metadata;
  data: Record<string, string>;
}
export interface NetworkPolicy {
  kind: "NetworkPolicy";
  metadata: Metadata;
  spec: {
    podSelector: { matchLabels?: Record<string, string> };
    policyTypes?: string[];
    ingress?: {
      from?: { namespaceSelector?: { matchLabels?: Record<string, string> }; podSelector?: unknown }[];
      ports?: { port?: number | string; protocol?: string }[];
    }[];
  };
}
export type Manifest =
  | Deployment
  | Service
  | PodDisruptionBudget
  | HorizontalPodAutoscaler
  | ConfigMap
  | NetworkPolicy;

/** The Dockerfile and config/kubernetes of a checkout, read once, with the lookups the tests share. */
export interface Artifacts {
  dockerfile: { args: Map<string, string>; stages: Stage[] };
  /** The runtime (last) stage's instructions of one keyword, their arguments in order. */
  runtimeInstructions(keyword: string): string[];
  manifests: Manifest[];
  /** The one manifest of `kind`; throws unless there is exactly one. */
  only<K extends Manifest["kind"]>(kind: K): Extract<Manifest, { kind: K }>;
  deployment: Deployment;
  podSpec: Deployment["spec"]["template"]["spec"];
  container: Container;
  configMap: ConfigMap;
  /** The ConfigMap's gateway.yaml through the gateway's own schema. */
  config: GatewayConfig;
  /** A probe's or Service's port (number or container port name) as a number. */
  containerPort(port: number | string | undefined): number | undefined;
}

export function readArtifacts(root: string): Artifacts {
  const dockerfile = parseDockerfile(readFileSync(path.join(root, "Dockerfile"), "utf8"));
  const runtime = dockerfile.stages.at(-1);
  const manifests = loadManifestFiles(path.join(root, "config/kubernetes")).map(
    (m) => m.doc as unknown as Manifest,
  );
  const only = <K extends Manifest["kind"]>(kind: K): Extract<Manifest, { kind: K }> => {
    const found = manifests.filter((m): m is Extract<Manifest, { kind: K }> => m.kind === kind);
    if (found.length !== 1)
      throw new Error(`${found.length} ${kind} in config/kubernetes, expected exactly one`);
    return found[0] as Extract<Manifest, { kind: K }>;
  };
  const deployment = only("Deployment");
  const podSpec = deployment.spec.template.spec;
  const container = podSpec.containers[0] as Container;
  const configMap = only("ConfigMap");
  const config = parseConfig(configMap.data["gateway.yaml"] ?? "", "configmap.yaml gateway.yaml", {
    INTROSPECTION_CLIENT_SECRET: "test-secret",
  });
  return {
    dockerfile,
    runtimeInstructions: (keyword) =>
      (runtime?.instructions ?? []).filter((i) => i.keyword === keyword).map((i) => i.args),
    manifests,
    only,
    deployment,
    podSpec,
    container,
    configMap,
    config,
    containerPort: (port) =>
      typeof port === "number" ? port : container.ports?.find((p) => p.name === port)?.containerPort,
  };
}
