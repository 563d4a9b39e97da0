/**
 * `decision` (SPEC §23): the decision listener, for teams whose edge proxy (nginx `auth_request`,
 * Traefik `forwardAuth`, Envoy `ext_authz`) forwards the calls itself and asks the gateway only
 * whether a call may pass. Absent: no decision listener.
 */
import { z } from "zod";
import { port } from "./primitives.js";

/** A path of the decision listener: absolute, no query or fragment, no trailing slash but `/`. */
const decisionPath = z.string().regex(/^\/(?:[^?#\s]*[^?#\s/])?$/, {
  error: "expected an absolute path without query, fragment or trailing slash (e.g. /decide)",
});

/** `decision`: optional at the top level. */
export const decisionSchema = z.strictObject({
  listen: z
    .strictObject({
      host: z
        .string()
        .min(1)
        .default("127.0.0.1")
        .describe("Interface to bind: loopback or a private address the edge proxy alone reaches."),
      port: port.default(8081).describe("TCP port; 0 picks a free one (tests)."),
    })
    .prefault({}),
  path: decisionPath
    .default("/decide")
    .describe("Decision requests go to this path and below it (Envoy's path_prefix)."),
  nginx_status: z
    .boolean()
    .default(false)
    .describe(
      "Answer every refusal but 401 as 403 with the real status in X-Gateway-Status (nginx auth_request).",
    ),
});

/** The validated `decision` block. */
export type DecisionConfig = z.output<typeof decisionSchema>;

/** One problem of the listeners' combination, at its key path. */
export interface ListenerProblem {
  path: (string | number)[];
  message: string;
}

/**
 * The cross-field checks of the listeners: the decision listener's port is neither the API's nor the
 * admin's, and a configuration without its API listener has a decision listener (else nothing
 * would serve a call). Port 0 (a free one, in tests) never collides.
 */
export function listenerProblems(
  listen: { enabled: boolean; port: number },
  adminPort: number,
  decision: { listen: { port: number } } | undefined,
): ListenerProblem[] {
  const out: ListenerProblem[] = [];
  if (decision === undefined) {
    if (!listen.enabled) {
      out.push({
        path: ["listen", "enabled"],
        message: "`listen.enabled: false` needs a `decision` block: nothing would serve a call",
      });
    }
    return out;
  }
  const p = decision.listen.port;
  if (p !== 0 && listen.enabled && p === listen.port) {
    out.push({
      path: ["decision", "listen", "port"],
      message: `the decision listener's port ${p} is listen.port's too: give each listener its own`,
    });
  }
  if (p !== 0 && p === adminPort) {
    out.push({
      path: ["decision", "listen", "port"],
      message: `the decision listener's port ${p} is admin.port's too: give each listener its own`,
    });
  }
  return out;
}
