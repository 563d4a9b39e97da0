/**
 * Value schemas shared by the sections of the configuration schema (SPEC §7), each with the error
 * message a user sees beside the key path.
 */
import { z } from "zod";

/** A positive integer (counts, durations in the unit the key names). */
export const positiveInt = z
  .int({ error: "expected a positive integer" })
  .positive({ error: "expected a positive integer" });

/** A non-negative integer (0 disables what the key enables). */
export const nonNegativeInt = z
  .int({ error: "expected a non-negative integer" })
  .nonnegative({ error: "expected a non-negative integer" });

/** A TCP port; 0 picks a free one. */
export const port = z
  .int({ error: "expected a port number (0-65535)" })
  .min(0, { error: "expected a port number (0-65535)" })
  .max(65535, { error: "expected a port number (0-65535)" });

/** An absolute `http://` or `https://` URL. */
export const httpUrl = z.string().refine((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol), {
  error: "expected an http:// or https:// URL",
});
