/**
 * `notifications` (SPEC §21): webhooks told when a caller's count in a calendar window reaches a
 * fraction of its limit. Each webhook is a URL, the file holding its HMAC-SHA256 key (read when the
 * configuration is built, so a reload re-reads it) and the fractions it wants; the deliveries share
 * one bounded in-process queue (`ratelimit/notifications/delivery-queue.ts`).
 */
import { z } from "zod";
import { durationMs, httpUrl, positiveInt } from "./primitives.js";

/** The largest `notifications.queue_size`: pending deliveries are held in memory. */
export const MAX_QUEUE_SIZE = 1_000_000;

/** A threshold: a fraction of a window's limit in (0, 1]. */
const threshold = z
  .number({ error: "expected a fraction in (0, 1], e.g. 0.8" })
  .gt(0, { error: "expected a fraction in (0, 1], e.g. 0.8" })
  .lte(1, { error: "expected a fraction in (0, 1], e.g. 0.8" });

const webhookSchema = z.strictObject({
  url: httpUrl.describe("Receiver of the POSTs (http:// or https://)."),
  secret_file: z
    .string()
    .min(1)
    .describe(
      "File holding the HMAC-SHA256 key of `X-Gateway-Signature` (trailing newline ignored); re-read on reload.",
    ),
  thresholds: z
    .array(threshold)
    .min(1, { error: "expected at least one threshold" })
    .refine((t) => new Set(t).size === t.length, { error: "expected each threshold once" })
    .default([0.8, 1])
    .describe(
      "Fractions of a calendar window's limit that trigger a POST; 1 also when a call is refused by it.",
    ),
  timeout_ms: durationMs.default(5_000).describe("Time the receiver has to answer one POST (ms)."),
});

/** `notifications`: optional; without it no crossing is looked for and the scripts do no extra work. */
export const notificationsSchema = z.strictObject({
  webhooks: z.array(webhookSchema).min(1, { error: "expected at least one webhook" }),
  queue_size: positiveInt
    .max(MAX_QUEUE_SIZE, { error: `expected a positive integer of at most ${MAX_QUEUE_SIZE}` })
    .default(10_000)
    .describe("Deliveries held (waiting, retrying or in flight); a crossing beyond is dropped and counted."),
});

/** The validated `notifications` block. */
export type NotificationsConfig = z.output<typeof notificationsSchema>;
/** One validated webhook. */
export type WebhookConfig = NotificationsConfig["webhooks"][number];
