/**
 * The Kubernetes manifests and the container image agree: ports, probes and the
 * HEALTHCHECK, the user, the config path and the writable paths of a read-only root. Read from the
 * Dockerfile and config/kubernetes; npm run test:container runs the built image with the
 * Deployment's security context and the ConfigMap's gateway.yaml.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { readArtifacts } from "../helpers/deployment-artifacts.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CONFIG_PATH = "/etc/gateway/gateway.yaml";
/** uid:gid of the users the official Node.js images (and test/container's stand-in) define. */
const IMAGE_USERS: Record<string, [number, number]> = { node: [1000, 1000] };

const { runtimeInstructions, podSpec, container, config, containerPort } = readArtifacts(ROOT);

/** The HEALTHCHECK's URL (the first http URL in its command). */
function healthcheckUrl(): URL {
  const m = /https?:\/\/[^'"\s,)]+/.exec(runtimeInstructions("HEALTHCHECK")[0] ?? "");
  expect(m, "no URL in the HEALTHCHECK").not.toBeNull();
  return new URL(m?.[0] ?? "http://invalid");
}

describe("config/kubernetes and the image agree", () => {
  const exposed = runtimeInstructions("EXPOSE")
    .flatMap((e) => e.split(/\s+/))
    .map((p) => Number(p.replace(/\/tcp$/, "")));

  it("the container ports are the ports the image EXPOSEs, and the ConfigMap listens on them", () => {
    const ports = (container.ports ?? []).map((p) => p.containerPort);
    expect([...ports].sort()).toEqual([...exposed].sort());
    expect(exposed).toContain(config.listen.port);
    expect(exposed).toContain(config.admin.port);
    // The kubelet probes the pod IP: both listeners must bind every interface, not loopback.
    expect(["0.0.0.0", "::"]).toContain(config.listen.host);
    expect(["0.0.0.0", "::"]).toContain(config.admin.host);
  });

  it("liveness and startup probes ask what the image's HEALTHCHECK asks", () => {
    const url = healthcheckUrl();
    expect(Number(url.port)).toBe(config.admin.port);
    for (const probe of [container.livenessProbe, container.startupProbe]) {
      expect(probe?.httpGet?.path).toBe(url.pathname);
      expect(containerPort(probe?.httpGet?.port)).toBe(Number(url.port));
    }
  });

  it("the pod runs as the image's USER, and the image's CMD is not overridden", () => {
    const user = runtimeInstructions("USER").at(-1) ?? "";
    const [uid, gid] = IMAGE_USERS[user] ?? user.split(":").map(Number);
    expect(uid, `unknown image user ${user}`).toBeGreaterThan(0);
    expect(container.securityContext?.runAsUser ?? podSpec.securityContext?.runAsUser).toBe(uid);
    expect(container.securityContext?.runAsGroup ?? podSpec.securityContext?.runAsGroup).toBe(gid);
    expect(container.command).toBeUndefined();
    expect(container.args).toBeUndefined();
  });

  it("the ConfigMap is mounted where the image's CMD and GATEWAY_CONFIG read it", () => {
    const cmd = JSON.parse(runtimeInstructions("CMD").at(-1) ?? "[]") as string[];
    const configArg = cmd[cmd.indexOf("--config") + 1];
    expect(configArg).toBe(CONFIG_PATH);
    expect(runtimeInstructions("ENV").join(" ")).toContain(`GATEWAY_CONFIG=${CONFIG_PATH}`);
    const mount = container.volumeMounts?.find((m) => m.mountPath === path.posix.dirname(CONFIG_PATH));
    expect(mount?.readOnly).toBe(true);
  });

  it("with a read-only root, the one path the gateway writes (/tmp) is an emptyDir", () => {
    const emptyDirs = new Set(
      (podSpec.volumes ?? []).filter((v) => v.emptyDir !== undefined).map((v) => v.name),
    );
    const writable = (container.volumeMounts ?? [])
      .filter((m) => emptyDirs.has(m.name))
      .map((m) => m.mountPath);
    expect(writable).toEqual(["/tmp"]);
  });

  it("the image it names carries this package's version", () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string };
    expect(container.image).toMatch(new RegExp(`/api-gateway:${pkg.version.replace(/\./g, "\\.")}$`));
  });
});
