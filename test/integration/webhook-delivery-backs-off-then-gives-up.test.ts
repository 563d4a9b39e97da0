/**
 * SPEC §21 delivery, against a real receiver that always answers 503: each retry waits about twice
 * as long as the one before (exponential backoff; jitter takes up to half of each delay away), the
 * delivery keeps its id, and once the retry period has passed it is given up, counted as `failed`
 * and logged. Durations are scaled down (the gateway retries for 10 minutes from 1 s).
 */
import pino from "pino";
import { expect, it } from "vitest";
import { systemClock } from "../../gateway/base/clock.js";
import { DeliveryQueue, type DeliveryResult } from "../../gateway/ratelimit/notifications/delivery-queue.js";
import { closeServer, listen } from "../helpers/http.js";
import { logLines } from "../helpers/log-lines.js";

it("backs off exponentially, keeps the id, and gives up after the retry period", async () => {
  const attempts: { atMs: number; id: string }[] = [];
  let gaveUp!: () => void;
  const done = new Promise<void>((resolve) => (gaveUp = resolve));
  const { server, url } = await listen((req, res) => {
    attempts.push({ atMs: performance.now(), id: String(req.headers["x-gateway-delivery"]) });
    req.resume();
    res.writeHead(503).end();
  });
  const counts: DeliveryResult[] = [];
  const logs = logLines();
  const queue = new DeliveryQueue({
    capacity: 10,
    count: (r) => {
      counts.push(r);
      if (r === "failed") gaveUp();
    },
    logger: pino({ level: "debug" }, logs.destination),
    // No jitter taken away (the clock's jitter source says 1): the delays are exactly 40, 80, 160, 320 ms.
    clock: { ...systemClock, random: () => 1 },
    retryForMs: 600,
    baseDelayMs: 40,
    maxDelayMs: 10_000,
  });
  try {
    expect(
      queue.enqueue({ url, body: '{"type":"usage.threshold"}', secret: Buffer.from("k"), timeoutMs: 1000 }),
    ).toBe(true);
    await done;
    expect(new Set(attempts.map((a) => a.id)).size).toBe(1);
    const gaps = attempts.slice(1).map((a, i) => a.atMs - attempts[i]!.atMs);
    expect(gaps.length).toBeGreaterThanOrEqual(3);
    for (let i = 0; i < gaps.length; i++) expect(gaps[i]!).toBeGreaterThanOrEqual(40 * 2 ** i - 5);
    expect(counts.filter((r) => r === "retried")).toHaveLength(attempts.length - 1);
    expect(counts.at(-1)).toBe("failed");
    expect(queue.size).toBe(0);
    const line = await logs.waitFor((l) => l.msg === "webhook delivery given up");
    expect(line).toMatchObject({ level: 40, url, attempts: attempts.length, status: 503 });
  } finally {
    await queue.close();
    await closeServer(server);
  }
});
