/**
 * Validation of Kubernetes manifests against the Kubernetes API schemas, offline, with the
 * `kubernetes-models` package (tommy351/kubernetes-models-ts): one model class per apiVersion/kind,
 * generated from the Kubernetes OpenAPI spec, whose `validate()` runs that schema (types, required
 * fields, enums, integer formats) through ajv.
 *
 * Those schemas allow unknown fields, as the API server's own schema does; `kubectl apply` rejects
 * them (field validation "Strict"), and a misspelt field (`runAsNonRot`) would otherwise pass
 * silently. So {@link unknownFields} also type-checks each manifest as an object literal of the
 * model's TypeScript interface: the compiler's excess-property check names every unknown field.
 */
import path from "node:path";
import ts from "typescript";

/** A manifest document: apiVersion, kind, and the rest. */
export type Manifest = { apiVersion?: unknown; kind?: unknown } & Record<string, unknown>;

/** `kubernetes-models/<group>/<version>/<Kind>`, the module of the model for apiVersion/kind. */
export function modelModule(doc: Manifest): string {
  if (typeof doc.apiVersion !== "string" || typeof doc.kind !== "string" || !/^\w+$/.test(doc.kind)) {
    throw new Error("apiVersion and kind must be strings");
  }
  return `kubernetes-models/${doc.apiVersion}/${doc.kind}`;
}

interface ModelClass {
  new (data: unknown): { validate(): void };
}

/**
 * Every schema problem of one document, as `<where>: <message>` lines (empty when valid). A kind
 * whose schema the package does not have is a problem too (kubeconform's "could not find schema").
 */
export async function schemaProblems(doc: Manifest, where: string): Promise<string[]> {
  let Model: ModelClass | undefined;
  try {
    const mod = (await import(modelModule(doc))) as Record<string, unknown>;
    Model = mod[String(doc.kind)] as ModelClass | undefined;
  } catch (err) {
    return [
      `${where}: no schema for ${String(doc.apiVersion)} ${String(doc.kind)} (${(err as Error).message})`,
    ];
  }
  if (Model === undefined) return [`${where}: no schema for ${String(doc.apiVersion)} ${String(doc.kind)}`];
  try {
    new Model(doc).validate();
    return [];
  } catch (err) {
    return [`${where}: ${(err as Error).message}`];
  }
}

/**
 * Unknown fields (and type mismatches) of each document, found by type-checking it as a literal of
 * its model's interface. `docs` maps a label (file and index) to the document; `root` is where
 * node_modules is found.
 */
export function unknownFields(docs: Map<string, Manifest>, root: string): string[] {
  const file = path.join(root, "test", "__kubernetes_manifests__.ts");
  const lines: string[] = [];
  const labels: string[] = [];
  for (const [label, doc] of docs) {
    const i = labels.push(label) - 1;
    lines.push(`import type { I${String(doc.kind)} as T${i} } from ${JSON.stringify(modelModule(doc))};`);
    lines.push(`export const m${i}: T${i} = ${JSON.stringify(doc)};`);
  }
  const source = lines.join("\n");
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (f) => f === file || fileExists(f);
  host.readFile = (f) => (f === file ? source : readFile(f));
  host.getSourceFile = (f, lang, onError, create) =>
    f === file ? ts.createSourceFile(f, source, lang) : getSourceFile(f, lang, onError, create);
  const program = ts.createProgram([file], options, host);
  const sf = program.getSourceFile(file);
  return ts.getPreEmitDiagnostics(program, sf).map((d) => {
    const line =
      d.start === undefined || sf === undefined ? 0 : sf.getLineAndCharacterOfPosition(d.start).line;
    const label = labels[Math.floor(line / 2)] ?? "?";
    return `${label}: ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`;
  });
}
