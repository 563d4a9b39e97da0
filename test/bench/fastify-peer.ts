/**
 * Cell (fy): the peer users compare with, as issue 17 measured it: Fastify with
 * `@fastify/http-proxy` (undici underneath) and `@fastify/rate-limit` counting in Redis, keyed by the
 * `Authorization` field. No authentication, no access log, no metrics: less work than the gateway
 * does. Usage: `fastify-peer.ts <port> <upstream url> <redis url>`.
 */
import fastifyHttpProxy from "@fastify/http-proxy";
import fastifyRateLimit from "@fastify/rate-limit";
import Fastify from "fastify";
import { Redis } from "ioredis";

const port = Number(process.argv[2]);
const upstream = process.argv[3]!;
const redis = new Redis(process.argv[4]!, { enableAutoPipelining: false, maxRetriesPerRequest: 1 });

const app = Fastify({ logger: false, keepAliveTimeout: 65_000 });
await app.register(fastifyRateLimit, {
  global: true,
  max: 1_000_000_000,
  timeWindow: 3_600_000,
  redis,
  nameSpace: "bench-fy:",
  keyGenerator: (req) => req.headers.authorization ?? req.ip,
});
await app.register(fastifyHttpProxy, { upstream, prefix: "/v1", rewritePrefix: "/v1" });
await app.listen({ port, host: "127.0.0.1" });
process.on("SIGTERM", () => {
  void app.close().then(() => {
    redis.disconnect();
    process.exit(0);
  });
});
