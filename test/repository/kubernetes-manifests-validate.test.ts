/**
 * config/kubernetes against the Kubernetes API schemas, offline: each document through
 * the kubernetes-models schema of its apiVersion/kind, and checked for unknown fields as
 * `kubectl apply` does. Fixtures named after the failure they cause prove each check bites.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadManifestFiles } from "../helpers/deployment-artifacts.js";
import { type Manifest, schemaProblems, unknownFields } from "../helpers/kubernetes-schema.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const K8S_DIR = path.join(ROOT, "config/kubernetes");
const BAD_DIR = path.join(ROOT, "test/fixtures/kubernetes");

function documents(dir: string): Map<string, Manifest> {
  return new Map(loadManifestFiles(dir).map((m) => [`${m.file}#${m.index}`, m.doc as Manifest]));
}

async function allSchemaProblems(docs: Map<string, Manifest>): Promise<string[]> {
  const out: string[] = [];
  for (const [where, doc] of docs) out.push(...(await schemaProblems(doc, where)));
  return out;
}

describe("config/kubernetes against the Kubernetes API schemas", () => {
  const docs = documents(K8S_DIR);

  it("holds the six objects of the deployment", () => {
    const kinds = [...docs.values()].map((d) => `${String(d.apiVersion)} ${String(d.kind)}`).sort();
    expect(kinds).toEqual([
      "apps/v1 Deployment",
      "autoscaling/v2 HorizontalPodAutoscaler",
      "networking.k8s.io/v1 NetworkPolicy",
      "policy/v1 PodDisruptionBudget",
      "v1 ConfigMap",
      "v1 Service",
    ]);
  });

  it("every document is valid for the schema of its apiVersion and kind", async () => {
    expect(await allSchemaProblems(docs)).toEqual([]);
  });

  it("no document has a field the API does not define (kubectl's strict field validation)", () => {
    expect(unknownFields(docs, ROOT)).toEqual([]);
  }, 60_000);
});

describe("the validation rejects what a cluster would", () => {
  const bad = documents(BAD_DIR);
  const doc = (file: string): Map<string, Manifest> =>
    new Map([...bad].filter(([where]) => where.startsWith(`${file}#`)));

  it("a misspelt field: unknown_field_runAsNonRot.yaml", () => {
    const problems = unknownFields(doc("unknown_field_runAsNonRot.yaml"), ROOT);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      /^unknown_field_runAsNonRot\.yaml#0: .*runAsNonRot"?' does not exist in type 'ISecurityContext'/,
    );
  }, 60_000);

  it("a wrong type: container_port_not_integer.yaml", async () => {
    const problems = await allSchemaProblems(doc("container_port_not_integer.yaml"));
    expect(problems).toEqual([expect.stringMatching(/containerPort must be integer/)]);
  });

  it("a missing required field: service_missing_ports_port.yaml", async () => {
    const problems = await allSchemaProblems(doc("service_missing_ports_port.yaml"));
    expect(problems).toEqual([expect.stringMatching(/spec\/ports\/0 must have required property port$/)]);
  });

  it("a kind with no schema: unknown_kind.yaml", async () => {
    const problems = await allSchemaProblems(doc("unknown_kind.yaml"));
    expect(problems).toEqual([
      expect.stringMatching(/^unknown_kind\.yaml#0: no schema for apps\/v1 Deploymnet/),
    ]);
  });
});
