/**
 * Small zod schemas shared by the configuration's parts, each with the message a user sees for a
 * wrong value ("expected a positive integer").
 */
import { METHODS } from "node:http";
import { z } from "zod";
import { closestKey } from "./key-paths.js";

/** An integer > 0. */
export const positiveInt = z
  .int({ error: "expected a positive integer" })
  .positive({ error: "expected a positive integer" });

/** An integer >= 0. */
export const nonNegativeInt = z
  .int({ error: "expected a non-negative integer" })
  .nonnegative({ error: "expected a non-negative integer" });

/** A TCP port, 0 (pick a free one) to 65535. */
export const port = z
  .int({ error: "expected a port number (0-65535)" })
  .min(0, { error: "expected a port number (0-65535)" })
  .max(65535, { error: "expected a port number (0-65535)" });

/** Methods Node's HTTP parser knows (RFC 9110 §9, PATCH, WebDAV, ...): any other never arrives. */
const KNOWN_METHODS: ReadonlySet<string> = new Set(METHODS);

/**
 * An HTTP method name, upper-cased; one Node's HTTP parser knows (issue 27: `GETT` was accepted and
 * matched nothing), with a suggestion for a misspelt one.
 */
export const httpMethod = z
  .string()
  .transform((m) => m.toUpperCase())
  .check((ctx) => {
    if (KNOWN_METHODS.has(ctx.value)) return;
    const guess = closestKey(ctx.value, ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
    ctx.issues.push({
      code: "custom",
      input: ctx.value,
      continue: true, // the checks of the objects around it still run (references)
      message:
        `expected an HTTP method name (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, ...)` +
        (guess === undefined ? "" : ` (did you mean "${guess}"?)`),
    });
  });

/** An absolute `http://` or `https://` URL. */
export const httpUrl = z.string().refine((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol), {
  error: "expected an http:// or https:// URL",
});
