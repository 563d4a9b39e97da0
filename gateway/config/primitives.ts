/**
 * Small zod schemas shared by the configuration's parts, each with the message a user sees for a
 * wrong value ("expected a positive integer").
 */
import { z } from "zod";

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

/** An HTTP method name, upper-cased. */
export const httpMethod = z
  .string()
  .regex(/^[A-Za-z]+$/, { error: "expected an HTTP method name" })
  .transform((m) => m.toUpperCase());

/** An absolute `http://` or `https://` URL. */
export const httpUrl = z.string().refine((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol), {
  error: "expected an http:// or https:// URL",
});
