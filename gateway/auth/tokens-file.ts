/**
 * The tokens file format (SPEC §5, `auth.static.tokens_file`): its schema, its errors and its
 * parser. A YAML mapping of token, or `sha256:<hex>` of the token, to the RFC 7662 fields the
 * gateway uses.
 */
import { readFileSync } from "node:fs";
import { LineCounter, isMap, isNode, isScalar, parseDocument } from "yaml";
import { z } from "zod";
import { hashToken, pickClaims, type TokenInfo } from "../base/token-info.js";

const HASHED_KEY = /^sha256:([0-9a-fA-F]{64})$/;

const entrySchema = z.strictObject({
  active: z.boolean().default(true),
  sub: z.string().min(1).optional(),
  client_id: z.string().min(1).optional(),
  username: z.string().min(1).optional(),
  scope: z
    .union([z.string(), z.array(z.string().regex(/^\S+$/, { error: "expected a scope without spaces" }))], {
      error: 'expected a space-separated string ("read write") or a list of scopes',
    })
    .optional(),
  exp: z.int().nonnegative({ error: "expected epoch seconds (a non-negative integer)" }).optional(),
});

/**
 * The file's schema: entries accept, besides the fields above, each of `claimNames` (the
 * `rate_limits.plan_claim` field, SPEC §10) as a string, and each of `valueClaims` (a budget's
 * claim, SPEC §22) as a string or a number.
 */
function fileSchemaOf(claimNames: readonly string[], valueClaims: readonly string[]) {
  const extra = claimNames.filter((n) => !Object.hasOwn(entrySchema.shape, n));
  const value = z.union([z.string().min(1), z.number()], { error: "expected a string or a number" });
  // Typed as the base entry: the extra fields are read only through `pickClaims`.
  const entry = entrySchema.extend(
    Object.fromEntries(
      extra.map((n) => [
        n,
        valueClaims.includes(n)
          ? value.optional()
          : z
              .string({ error: "expected a plan name (a string)" })
              .min(1, { error: "expected a plan name (a string)" })
              .optional(),
      ]),
    ),
  ) as unknown as typeof entrySchema;
  return {
    entry,
    file: z.record(
      z
        .string()
        .min(1)
        .refine((k) => !k.startsWith("sha256:") || HASHED_KEY.test(k), {
          error: "expected sha256: followed by 64 hex digits",
        }),
      entry,
      { error: (iss) => (iss.code === "invalid_type" ? "expected a mapping of token to fields" : undefined) },
    ),
  };
}

/** One zod issue as `message`, with the nested key issue or the unknown field names spelled out. */
function issueMessage(issue: z.core.$ZodIssue, known: readonly string[]): string {
  if (issue.code === "invalid_key") return issue.issues.map((i) => i.message).join("; ");
  if (issue.code === "unrecognized_keys") {
    return `unknown field ${issue.keys.join(", ")} (known: ${known.join(", ")})`;
  }
  return issue.message;
}

/**
 * Names an entry in an error message without printing a plaintext token: `sha256:` keys are shown
 * whole (they are not secrets), plaintext ones by a short prefix.
 */
function describeKey(key: string): string {
  if (key.startsWith("sha256:")) return JSON.stringify(key);
  return `"${key.slice(0, Math.min(4, Math.floor(key.length / 3)))}…"`;
}

/** One problem of a tokens file: the entry it concerns (as {@link describeKey} names it), and where. */
export interface TokensFileProblem {
  /** The entry and field (`"dev-…".scope`); absent for the file as a whole. */
  entry?: string;
  message: string;
  /** 1-based line in the tokens file, when known. */
  line?: number;
}

/** A tokens file that cannot be read or is invalid; `problems` lists every issue found. */
export class TokensFileError extends Error {
  /**
   * @param file - the path that was read
   * @param unreadable - the file could not be read at all (`problems[0]` says why)
   */
  constructor(
    readonly file: string,
    readonly problems: readonly TokensFileProblem[],
    readonly unreadable = false,
    options?: { cause?: unknown },
  ) {
    super(
      unreadable
        ? `cannot read tokens file ${file}: ${problems[0]?.message}`
        : `invalid tokens file ${file}:\n` +
            problems
              .map((p) => `  ${p.entry ?? "(root)"}: ${p.message}${p.line ? ` (line ${p.line})` : ""}`)
              .join("\n"),
      options,
    );
    this.name = "TokensFileError";
  }
}

/**
 * Reads and validates a tokens file in this thread ({@link loadStaticTokens} without the worker).
 * @throws TokensFileError as {@link loadStaticTokens}
 */
export function parseStaticTokens(
  file: string,
  claimNames: readonly string[] = [],
  valueClaims: readonly string[] = [],
): Map<string, TokenInfo> {
  const lineCounter = new LineCounter();
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    // Node's message repeats the path (`ENOENT: no such file or directory, open '<file>'`).
    const reason = (err as Error).message.replace(/, \w+ '.*'$/, "");
    throw new TokensFileError(file, [{ message: reason }], true, { cause: err });
  }
  // yaml's own unique-key check compares every key with every other: 3.5 s for 10k tokens
  // (0.5 s without). Keys are checked below with a Set instead.
  const doc = parseDocument(text, { lineCounter, uniqueKeys: false });
  if (doc.errors.length > 0) {
    throw new TokensFileError(
      file,
      doc.errors.map((e) => {
        const message = e.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "");
        return e.linePos === undefined ? { message } : { message, line: e.linePos[0].line };
      }),
    );
  }
  const lineAt = (node: unknown): { line?: number } =>
    isNode(node) && node.range ? { line: lineCounter.linePos(node.range[0]).line } : {};
  const lineOf = (at: readonly PropertyKey[]) => lineAt(doc.getIn(at, true));
  const twice = "the same token is listed twice";
  if (isMap(doc.contents)) {
    const seen = new Set<unknown>();
    for (const { key } of doc.contents.items) {
      const value = isScalar(key) ? key.value : key;
      if (seen.has(value)) {
        throw new TokensFileError(file, [
          { entry: describeKey(String(value)), message: twice, ...lineAt(key) },
        ]);
      }
      seen.add(value);
    }
  }
  const schema = fileSchemaOf(claimNames, valueClaims);
  const parsed = schema.file.safeParse(doc.toJS() ?? {});
  if (!parsed.success) {
    throw new TokensFileError(
      file,
      parsed.error.issues.map((issue) => {
        const [key, ...rest] = issue.path;
        if (key === undefined) return { message: issue.message };
        const entry = describeKey(String(key)) + rest.map((p) => `.${String(p)}`).join("");
        return {
          entry,
          message: issueMessage(issue, Object.keys(schema.entry.shape)),
          ...lineOf(issue.path),
        };
      }),
    );
  }
  const tokens = new Map<string, TokenInfo>();
  for (const [key, e] of Object.entries(parsed.data)) {
    const hash = HASHED_KEY.exec(key)?.[1]?.toLowerCase() ?? hashToken(key);
    if (tokens.has(hash)) {
      throw new TokensFileError(file, [{ entry: describeKey(key), message: twice, ...lineOf([key]) }]);
    }
    const info: TokenInfo = {
      active: e.active,
      scope: Object.freeze(
        typeof e.scope === "string" ? e.scope.split(" ").filter(Boolean) : (e.scope ?? []),
      ),
    };
    if (e.sub !== undefined) info.sub = e.sub;
    if (e.client_id !== undefined) info.clientId = e.client_id;
    if (e.username !== undefined) info.username = e.username;
    if (e.exp !== undefined) info.exp = e.exp;
    const claims = pickClaims(e as Record<string, unknown>, claimNames);
    if (claims !== undefined) info.claims = claims;
    tokens.set(hash, Object.freeze(info));
  }
  return tokens;
}
