/** The `cors` block (SPEC §14): which browser origins may call the API, and how. */
import { z } from "zod";
import { httpMethod, nonNegativeInt } from "./primitives.js";

const originSchema = z
  .string()
  .refine((o) => o === "*" || /^https?:\/\/(\*\.)?[A-Za-z0-9.-]+(:\d+)?$/.test(o), {
    error: 'expected "*" or an origin like https://app.example.com or https://*.example.com',
  });

/** `cors`: optional at the top level. */
export const corsSchema = z.strictObject({
  allowed_origins: z
    .array(originSchema)
    .min(1)
    .describe(
      "Origins whose pages may call the API: exact, `https://*.example.com` (one or more labels), or `*`.",
    ),
  allowed_methods: z
    .array(httpMethod)
    .min(1)
    .default(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"])
    .describe("Methods a preflight allows."),
  allowed_headers: z
    .array(z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, { error: "expected a header name" }))
    .min(1)
    .default(["authorization", "content-type", "x-request-id"])
    .describe("Request headers a preflight allows."),
  allow_credentials: z.boolean().default(false).describe("Send Access-Control-Allow-Credentials: true."),
  max_age_s: nonNegativeInt.default(600).describe("How long a browser may cache a preflight answer (s)."),
});
