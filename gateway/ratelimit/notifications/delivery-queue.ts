/**
 * Webhook deliveries off the request path (SPEC §21): a bounded in-process queue, each delivery a
 * POST through undici with a per-attempt timeout, retried on a non-2xx answer or no answer with
 * exponential backoff and jitter for at least {@link DeliveryQueueOptions.retryForMs} (10 minutes)
 * from its first attempt, then given up. At least once: a delivery whose answer was lost is sent
 * again, with the same `X-Gateway-Delivery` id and the same signed body, so a receiver drops the
 * duplicate by id.
 *
 * The request path only calls {@link DeliveryQueue.enqueue}, which appends to an array (or counts
 * a drop when the queue holds `capacity` deliveries: waiting, in flight or waiting to retry) and
 * returns; everything else runs from timers and I/O callbacks, at most `concurrency` POSTs at a
 * time, so a slow or dead receiver adds no latency to calls — it only fills the queue, whose bound
 * is what can be lost (`gateway_webhook_deliveries_total{result="dropped"}`).
 *
 * Retry delays: `min(maxDelayMs, baseDelayMs × 2^(attempt-1))`, of which a random half is taken
 * away ("equal jitter", AWS Architecture Blog "Exponential Backoff And Jitter"), so deliveries to a
 * receiver that comes back do not arrive in lockstep from every replica.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { Agent, request } from "undici";
import type { Clock } from "../../base/clock.js";
import type { WebhookDeliveryResult } from "../../base/results.js";
import { signatureOf } from "./signature.js";

/** The results counted in `gateway_webhook_deliveries_total{result}`. */
export type DeliveryResult = WebhookDeliveryResult;

/** One POST to one webhook, the same on every attempt. */
export interface Delivery {
  url: string;
  /** The JSON body (SPEC §21), signed as it is. */
  body: string;
  secret: Buffer;
  /** Per-attempt timeout (ms). */
  timeoutMs: number;
}

interface Pending extends Delivery {
  /** `X-Gateway-Delivery`: stable across retries. */
  id: string;
  signature: string;
  /** Monotonic time of the first attempt (ms). */
  firstMs: number;
  attempts: number;
}

/** Options of {@link DeliveryQueue}. */
export interface DeliveryQueueOptions {
  /** Deliveries held at once (waiting, in flight, waiting to retry). */
  capacity: number;
  /** Counts a delivery's result (`gateway_webhook_deliveries_total`). */
  count(result: DeliveryResult): void;
  logger: Logger;
  clock: Clock;
  /** Time retries go on for after the first attempt (ms). @default 600000 (10 minutes) */
  retryForMs?: number;
  /** First retry delay before jitter (ms). @default 1000 */
  baseDelayMs?: number;
  /** Longest retry delay (ms). @default 60000 */
  maxDelayMs?: number;
  /** POSTs in flight at once. @default 8 */
  concurrency?: number;
}

/** The queue of one gateway, kept across reloads (each configuration's notifier feeds it). */
export class DeliveryQueue {
  private readonly ready: Pending[] = [];
  private held = 0;
  private inFlight = 0;
  private closed = false;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly agent = new Agent({ connections: 8, keepAliveTimeout: 4000 });
  private readonly retryForMs: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly concurrency: number;
  private readonly pump = (): void => this.drain();

  constructor(private readonly options: DeliveryQueueOptions) {
    this.retryForMs = options.retryForMs ?? 600_000;
    this.baseDelayMs = options.baseDelayMs ?? 1000;
    this.maxDelayMs = options.maxDelayMs ?? 60_000;
    this.concurrency = options.concurrency ?? 8;
  }

  /** The queue's bound. */
  get capacity(): number {
    return this.options.capacity;
  }

  /** Deliveries held now (waiting, in flight, waiting to retry). */
  get size(): number {
    return this.held;
  }

  /**
   * Queues a delivery; never waits and never throws.
   * @returns false when the queue was full (the delivery is dropped and counted) or closed
   */
  enqueue(delivery: Delivery): boolean {
    if (this.closed || this.held >= this.options.capacity) {
      this.options.count("dropped");
      return false;
    }
    this.held++;
    this.ready.push({ ...delivery, id: randomUUID(), signature: "", firstMs: -1, attempts: 0 });
    // Sent from the next turn: the call that found the crossing goes on untouched.
    if (this.ready.length === 1) setImmediate(this.pump);
    return true;
  }

  /** Stops: timers cleared, connections closed; what is held is lost (shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.ready.length = 0;
    await this.agent.destroy();
  }

  private drain(): void {
    while (!this.closed && this.inFlight < this.concurrency && this.ready.length > 0) {
      const p = this.ready.shift()!;
      this.inFlight++;
      void this.attempt(p);
    }
  }

  private async attempt(p: Pending): Promise<void> {
    if (p.attempts === 0) {
      p.firstMs = this.options.clock.monotonicMs();
      p.signature = signatureOf(p.body, p.secret);
    }
    p.attempts++;
    let status = 0;
    let problem = "";
    try {
      const res = await request(p.url, {
        method: "POST",
        dispatcher: this.agent,
        headers: {
          "content-type": "application/json",
          "x-gateway-signature": p.signature,
          "x-gateway-delivery": p.id,
          "user-agent": "gateway-webhooks",
        },
        body: p.body,
        headersTimeout: p.timeoutMs,
        bodyTimeout: p.timeoutMs,
        signal: AbortSignal.timeout(p.timeoutMs),
      });
      status = res.statusCode;
      await res.body.dump();
    } catch (err) {
      problem = (err as Error).message;
    }
    this.inFlight--;
    if (this.closed) return;
    if (status >= 200 && status < 300) {
      this.held--;
      this.options.count("delivered");
    } else if (this.options.clock.monotonicMs() - p.firstMs >= this.retryForMs) {
      this.held--;
      this.options.count("failed");
      this.options.logger.warn(
        { delivery: p.id, url: originOf(p.url), attempts: p.attempts, status, err: problem || undefined },
        "webhook delivery given up",
      );
    } else {
      this.options.count("retried");
      this.options.logger.debug(
        { delivery: p.id, url: p.url, status, err: problem || undefined },
        "webhook retry",
      );
      const delay = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (p.attempts - 1));
      const t = setTimeout(
        () => {
          this.timers.delete(t);
          this.ready.push(p);
          this.drain();
        },
        delay / 2 + (this.options.clock.random() * delay) / 2,
      );
      t.unref();
      this.timers.add(t);
    }
    this.drain();
  }
}

/** A webhook URL's origin: its path may hold a secret (many receivers put one there), never logged. */
function originOf(url: string): string {
  return new URL(url).origin;
}
