/**
 * A large tokens file is parsed in a worker thread (its parse garbage dies with
 * the worker's heap). The answer must be the one the in-thread parser gives: the same entries,
 * frozen, claims on a null prototype, and the same errors with their lines.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadStaticTokens, parseInWorker } from "../../gateway/auth/static-source.js";
import { parseStaticTokens, TokensFileError } from "../../gateway/auth/tokens-file.js";
import { hashToken } from "../../gateway/base/token-info.js";

const dir = mkdtempSync(path.join(tmpdir(), "tokens-worker-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A file of `n` entries, well over the worker threshold (256 KiB) for n = 6000. */
function bigFile(name: string, n: number, extra = ""): string {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    lines.push(
      i % 2 === 0
        ? `worker-token-${i}: { sub: user-${i}, client_id: app, scope: "read write", plan: pro, exp: 4102444800 }`
        : `worker-token-${i}: { client_id: svc-${i}, scope: [read], active: ${i % 5 !== 1} }`,
    );
  }
  const file = path.join(dir, name);
  writeFileSync(file, lines.join("\n") + "\n" + extra);
  return file;
}

describe("a large tokens file, parsed in a worker thread", () => {
  it("gives the in-thread parser's entries, frozen, with null-prototype claims", () => {
    const file = bigFile("big.yaml", 6000);
    // Null would mean the worker could not start (the loader then parses in this thread).
    const viaWorker = parseInWorker(file, ["plan"])!;
    expect(viaWorker).not.toBeNull();
    expect(viaWorker).toEqual(parseStaticTokens(file, ["plan"]));
    expect(loadStaticTokens(file, ["plan"])).toEqual(viaWorker);
    expect(viaWorker.size).toBe(6000);
    const info = viaWorker.get(hashToken("worker-token-0"))!;
    expect(info).toMatchObject({ sub: "user-0", clientId: "app", scope: ["read", "write"] });
    expect(Object.isFrozen(info) && Object.isFrozen(info.scope) && Object.isFrozen(info.claims)).toBe(true);
    expect(Object.getPrototypeOf(info.claims)).toBeNull();
    expect(info.claims?.plan).toBe("pro");
  });

  it("throws the in-thread parser's TokensFileError, line included", () => {
    const file = bigFile("dup.yaml", 6000, "worker-token-7: { sub: again }\n");
    const inThread = (() => {
      try {
        parseStaticTokens(file);
      } catch (err) {
        return err as TokensFileError;
      }
    })();
    expect(inThread).toBeInstanceOf(TokensFileError);
    let thrown: unknown;
    try {
      parseInWorker(file, []);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(TokensFileError);
    expect((thrown as TokensFileError).problems).toEqual(inThread!.problems);
    expect((thrown as TokensFileError).problems[0]).toMatchObject({ line: 6001 });
    expect((thrown as TokensFileError).message).toBe(inThread!.message);
  });
});
