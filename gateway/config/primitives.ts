/** Value schemas shared by the configuration's blocks, each with the message a user sees. */
import { z } from "zod";

/** A positive integer. */
export const positiveInt = z
  .int({ error: "expected a positive integer" })
  .positive({ error: "expected a positive integer" });
/** A non-negative integer. */
export const nonNegativeInt = z
  .int({ error: "expected a non-negative integer" })
  .nonnegative({ error: "expected a non-negative integer" });
/** A TCP port; 0 picks a free one. */
export const port = z
  .int({ error: "expected a port number (0-65535)" })
  .min(0, { error: "expected a port number (0-65535)" })
  .max(65535, { error: "expected a port number (0-65535)" });
/** An HTTP method name, upper-cased. */
export const httpMethod = z
  .string()
  .regex(/^[A-Za-z]+$/, { error: "expected an HTTP method name" })
  .transform((m) => m.toUpperCase());
