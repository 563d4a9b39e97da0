/**
 * The key `consistent_hash` balances on (SPEC §16 `hash_on`): the caller's identity key (the same
 * string its rate-limit windows are keyed by), the client IP, or one request header (its first
 * value when repeated; calls without it get no key and are spread by round robin).
 */
import type { HeaderMap } from "../base/request-facts.js";

/**
 * @param identityKey - the caller's identity key (`sub:alice`, ...)
 * @param clientIp - the client IP as `trust_proxy` chose it
 * @param headers - the request's fields, before the upstream request is prepared
 * @returns the key, or undefined when the named header is absent or empty
 */
export function hashKeyOf(
  on: HashOn,
  identityKey: string,
  clientIp: string,
  headers: HeaderMap,
): string | undefined {
  switch (on.kind) {
    case "identity":
      return identityKey;
    case "ip":
      return clientIp;
    case "header": {
      const v = headers[on.name];
      const first = typeof v === "string" ? v : v?.[0];
      return first === undefined || first === "" ? undefined : first;
    }
  }
}

/** `hash_on` compiled: where a call's hash key comes from. */
export type HashOn =
  | { readonly kind: "identity" }
  | { readonly kind: "ip" }
  | { readonly kind: "header"; readonly name: string };

/** Compiles `hash_on` (`identity`, `ip` or `header:<name>`). */
export function compileHashOn(spec: string): HashOn {
  if (spec === "identity") return { kind: "identity" };
  if (spec === "ip") return { kind: "ip" };
  return { kind: "header", name: spec.slice("header:".length).toLowerCase() };
}
