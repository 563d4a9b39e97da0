/**
 * Usage operations (SPEC §21) with a real Redis — standalone, behind Sentinel, and a three-node
 * Cluster — and two gateway replicas sharing it, every promise seen from the replica that did not
 * make the change:
 * - `GET /usage/<identity>` is exact (both replicas' calls, sliding and calendar windows) and
 *   counts nothing;
 * - a reset made on one replica lets the identity call on the other within 1 s, although that
 *   replica was answering its over-limit calls locally (the rejection cache);
 * - an override made on one replica applies to the identity's next call on the other within 1 s,
 *   keeping its counts (a month's quota credited: 5 spent of 5, raised to 8, 2 left after the call);
 * - a caller's reset reaches its own windows in a class with budgets (kept under the
 *   organisation's hash tag), not the organisation's budget, which has a reset of its own;
 * - overrides live in Redis: a replica started later and a reloaded one apply them; one with
 *   `expires_at` ends by itself;
 * - a call of an identity with an override is still one Redis round trip (one EVALSHA on its own
 *   keys): the replicas' polls of `{admin}` are the only other commands (seen with MONITOR).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen, request } from "../helpers/http.js";
import { scrape } from "../helpers/prom.js";
import { RedisServer, startCluster, startSentinel, waitFor } from "../helpers/redis-server.js";

const TOKEN = "two-replicas-admin-token";
const USERS = ["alice", "bob", "carol", "dave", "erin", "frank"];

describe.each(["standalone", "sentinel", "cluster"] as const)(
  "usage operations on %s Redis",
  (deployment) => {
    let upstream: Awaited<ReturnType<typeof listen>>;
    let redis: RedisServer | undefined;
    let cluster: Awaited<ReturnType<typeof startCluster>> | undefined;
    let sentinel: Awaited<ReturnType<typeof startSentinel>> | undefined;
    let dir: string;
    let a: TestGateway;
    let b: TestGateway;
    const started: TestGateway[] = [];

    function config(): Record<string, unknown> {
      const store =
        deployment === "standalone"
          ? { url: redis!.url, key_prefix: "usage2", command_timeout_ms: 5000 }
          : deployment === "sentinel"
            ? {
                sentinels: [sentinel!.sentinel.url],
                name: "usage2",
                key_prefix: "usage2s",
                command_timeout_ms: 5000,
              }
            : { cluster: cluster!.nodes.map((n) => n.url), key_prefix: "usage2c", command_timeout_ms: 5000 };
      return testConfig(upstream.url, {
        admin: { host: "127.0.0.1", port: 0, token_file: path.join(dir, "admin-token") },
        auth: { realm: "api", static: { tokens_file: path.join(dir, "tokens.yaml") } },
        rate_limits: {
          store: { redis: store },
          classes: {
            search: {
              match: { paths: ["/v1/search"] },
              windows: [{ limit: 2, window_s: 3600 }],
              budgets: [{ key: "claim:org_id", windows: [{ limit: 100, window_s: 3600 }] }],
            },
            read: {
              match: { methods: ["GET"] },
              windows: [
                { limit: 100, window_s: 3600 },
                { limit: 5, period: "month" },
              ],
            },
            write: { match: { methods: ["POST"] }, windows: [{ limit: 2, window_s: 3600 }] },
          },
          anonymous: { windows: [{ limit: 1000, window_s: 3600 }] },
        },
      });
    }

    const admin = (gw: TestGateway, p: string, method = "GET", body?: unknown) =>
      request(`${gw.adminUrl}${p}`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const call = (gw: TestGateway, user: string, method = "GET") =>
      request(`${gw.url}/v1/x`, { method, headers: { authorization: `Bearer ${user}-token` } });
    const usage = async (gw: TestGateway, id: string) => JSON.parse((await admin(gw, `/usage/${id}`)).body);

    beforeAll(async () => {
      upstream = await listen((_req, res) => res.end("ok"));
      if (deployment === "standalone") redis = await RedisServer.start();
      else if (deployment === "sentinel") sentinel = await startSentinel("usage2");
      else cluster = await startCluster();
      dir = mkdtempSync(path.join(tmpdir(), "gw-usage2-"));
      writeFileSync(path.join(dir, "admin-token"), `${TOKEN}\n`);
      const tokens = Object.fromEntries(
        USERS.map((u) => [`${u}-token`, { sub: u, scope: "read write", org_id: "acme" }]),
      );
      writeFileSync(path.join(dir, "tokens.yaml"), stringify(tokens));
      [a, b] = await Promise.all([startGateway(config()), startGateway(config())]);
      started.push(a, b);
    }, 60_000);

    afterAll(async () => {
      await Promise.all(started.map((g) => g.close()));
      await closeServer(upstream.server);
      await redis?.destroy();
      await cluster?.destroy();
      await sentinel?.destroy();
      rmSync(dir, { recursive: true, force: true });
    });

    it("reads exact usage, counted by both replicas, without counting", async () => {
      for (let i = 0; i < 2; i++) expect((await call(a, "alice")).status).toBe(200);
      expect((await call(b, "alice")).status).toBe(200);
      const fromA = await usage(a, "sub:alice");
      const fromB = await usage(b, "sub%3Aalice");
      expect(fromB).toEqual(fromA);
      expect(fromA.classes.read).toEqual([
        { limit: 100, window_s: 3600, used: 3, remaining: 97, reset: expect.any(Number) },
        { limit: 5, period: "month", used: 3, remaining: 2, reset: expect.any(Number) },
      ]);
      expect(fromA.classes.write).toEqual([
        { limit: 2, window_s: 3600, used: 0, remaining: 2, reset: expect.any(Number) },
      ]);
      // GET /usage/top, behind the same token, from the other replica.
      const top = await admin(b, "/usage/top?class=read&period=month");
      expect(top.status).toBe(200);
      expect(JSON.parse(top.body)).toEqual({
        class: "read",
        period: "month",
        top: [{ identity: "sub:alice", used: 3 }],
      });
      const call4 = await call(a, "alice");
      expect(call4.headers["x-ratelimit-remaining"]).toBe("1");
    });

    it("a reset takes the caller off the top list at once, on every replica", async () => {
      const topOf = async (gw: TestGateway) =>
        JSON.parse((await admin(gw, "/usage/top?class=read&period=month")).body).top;
      expect(await topOf(b)).toContainEqual({ identity: "sub:alice", used: 4 });
      expect((await admin(a, "/usage/sub:alice/reset", "POST", { class: "read" })).status).toBe(200);
      expect(await topOf(b)).toEqual([]);
      expect((await call(b, "alice")).status).toBe(200);
      expect(await topOf(a)).toEqual([{ identity: "sub:alice", used: 1 }]);
    });

    it("a reset on one replica reaches the other, which was refusing locally, within 1 s", async () => {
      expect((await call(b, "bob", "POST")).status).toBe(200);
      expect((await call(b, "bob", "POST")).status).toBe(200);
      const local = async () =>
        (await scrape(b.adminUrl)).value("gateway_ratelimit_local_rejections_total", { class: "write" });
      const before = await local();
      for (let i = 0; i < 3; i++) expect((await call(b, "bob", "POST")).status).toBe(429);
      expect(await local()).toBeGreaterThan(before); // answered without Redis
      const reset = await admin(a, "/usage/sub:bob/reset", "POST", { class: "write" });
      expect(reset.status).toBe(200);
      expect(JSON.parse(reset.body).classes.write[0].used).toBe(0);
      const t0 = Date.now();
      await waitFor("bob admitted on b", async () => (await call(b, "bob", "POST")).status === 200, 1500);
      expect(Date.now() - t0).toBeLessThanOrEqual(1000);
      expect((await usage(b, "sub:bob")).classes.write[0].used).toBe(1);
    });

    it("a caller's reset reaches its own windows in a class with budgets, not the organisation's", async () => {
      const search = (gw: TestGateway) =>
        request(`${gw.url}/v1/search`, { headers: { authorization: "Bearer frank-token" } });
      expect((await search(a)).status).toBe(200);
      expect((await search(a)).status).toBe(200);
      expect((await search(b)).status).toBe(429);
      expect((await search(b)).status).toBe(429);
      const reset = await admin(a, "/usage/sub:frank/reset", "POST", { class: "search" });
      expect(reset.status).toBe(200);
      const t0 = Date.now();
      await waitFor("frank admitted on b", async () => (await search(b)).status === 200, 1500);
      expect(Date.now() - t0).toBeLessThanOrEqual(1000);
      const org = await usage(b, "claim:org_id:acme");
      expect(Object.keys(org.classes)).toEqual(["search"]);
      expect(org.classes.search).toEqual([
        { limit: 100, window_s: 3600, used: 3, remaining: 97, reset: expect.any(Number) },
      ]);
      const orgReset = await admin(b, "/usage/claim:org_id:acme/reset", "POST");
      expect(JSON.parse(orgReset.body).classes.search[0].used).toBe(0);
      // Frank's own windows keep their count (1 of 2 since his reset): one more, then refused.
      expect((await search(a)).status).toBe(200);
      expect((await search(a)).status).toBe(429);
    });

    it("an override on one replica applies on the other within 1 s and keeps the counts", async () => {
      for (let i = 0; i < 5; i++) expect((await call(b, "carol")).status).toBe(200);
      expect((await call(b, "carol")).status).toBe(429);
      expect((await call(b, "carol")).status).toBe(429);
      const windows = [
        { limit: 100, window_s: 3600 },
        { limit: 8, period: "month" },
      ];
      const put = await admin(a, "/overrides/sub:carol", "PUT", { classes: { read: windows } });
      expect(put.status).toBe(200);
      const t0 = Date.now();
      let admitted: Awaited<ReturnType<typeof call>> | undefined;
      await waitFor(
        "carol admitted on b",
        async () => {
          const r = await call(b, "carol");
          if (r.status === 200) admitted = r;
          return r.status === 200;
        },
        1500,
      );
      expect(Date.now() - t0).toBeLessThanOrEqual(1000);
      expect(admitted!.headers["x-ratelimit-limit"]).toBe("8");
      expect(admitted!.headers["x-ratelimit-remaining"]).toBe("2");
      const seen = await usage(b, "sub:carol");
      expect(seen.override).toEqual({ identity: "sub:carol", classes: { read: windows }, expires_at: null });
      expect(seen.classes.read[1]).toMatchObject({ limit: 8, used: 6, remaining: 2 });
      const listed = JSON.parse((await admin(b, "/overrides")).body).overrides;
      expect(listed.map((o: { identity: string }) => o.identity)).toContain("sub:carol");
    });

    it("overrides survive a restart and a reload, and end at expires_at by themselves", async () => {
      const c = await startGateway(config());
      started.push(c);
      await waitFor(
        "c loads the overrides",
        async () => (await admin(c, "/overrides/sub:carol")).status === 200,
      );
      expect((await call(c, "carol")).headers["x-ratelimit-limit"]).toBe("8");
      const file = path.join(dir, "gateway.yaml");
      writeFileSync(file, stringify(config()));
      expect(await a.gateway.reload(file)).toBe(true);
      expect((await call(a, "carol")).headers["x-ratelimit-limit"]).toBe("8");

      const expiresAt = Math.floor(Date.now() / 1000) + 2;
      const windows = [{ limit: 1, window_s: 3600 }];
      const put = await admin(a, "/overrides/sub:dave", "PUT", {
        classes: { write: windows },
        expires_at: expiresAt,
      });
      expect(put.status).toBe(200);
      await waitFor("dave's override on b", async () => (await usage(b, "sub:dave")).override !== null, 1500);
      expect((await call(b, "dave", "POST")).headers["x-ratelimit-limit"]).toBe("1");
      await waitFor(
        "dave's override ended",
        async () => (await usage(b, "sub:dave")).override === null && Date.now() / 1000 >= expiresAt,
        5000,
      );
      expect(Date.now() / 1000).toBeGreaterThanOrEqual(expiresAt);
      const r = await call(b, "dave", "POST");
      expect(r.status).toBe(200);
      expect(r.headers["x-ratelimit-limit"]).toBe("2");
      // The next change drops it from the store too.
      await admin(a, "/overrides/sub:erin", "PUT", { classes: { write: windows } });
      const all = JSON.parse((await admin(a, "/overrides")).body).overrides;
      expect(all.map((o: { identity: string }) => o.identity).sort()).toEqual(["sub:carol", "sub:erin"]);
      expect((await admin(a, "/overrides/sub:erin", "DELETE")).status).toBe(200);
      await waitFor(
        "erin's override gone on b",
        async () => (await admin(b, "/overrides/sub:erin")).status === 404,
      );
    }, 20_000);

    it.runIf(deployment === "standalone")(
      "keeps one round trip per call for an identity with an override",
      async () => {
        const windows = [
          { limit: 500, window_s: 3600 },
          { limit: 1000, period: "month" },
        ];
        expect((await admin(a, "/overrides/sub:alice", "PUT", { classes: { read: windows } })).status).toBe(
          200,
        );
        // A warm token (a reload re-read the static file: its first use is looked up again).
        expect((await call(a, "alice")).status).toBe(200);
        // MONITOR on a plain socket: one line per command, `+<time> [<db> <client>] "cmd" "arg" ...`;
        // commands a script runs say `lua` as their client.
        const seen: string[][] = [];
        const monitor = net.connect(redis!.port, "127.0.0.1");
        let buffered = "";
        monitor.on("data", (chunk: Buffer) => {
          buffered += chunk.toString("utf8");
          const lines = buffered.split("\r\n");
          buffered = lines.pop()!;
          for (const l of lines) {
            const m = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] (.*)$/.exec(l);
            if (m !== null && m[1] !== "lua")
              seen.push([...m[2]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((x) => x[1]!));
          }
        });
        monitor.write("MONITOR\r\n");
        // The replicas poll `{admin}` every 400 ms: their first poll seen says MONITOR is on.
        await waitFor("a first command seen", async () => seen.length > 0);
        seen.length = 0;
        const N = 10;
        for (let i = 0; i < N; i++) expect((await call(a, "alice")).headers["x-ratelimit-limit"]).toBe("500");
        monitor.destroy();
        const ours = seen.filter((args) => !args.some((x) => x.includes("{admin}")));
        const calls = ours.filter((args) => args.some((x) => x.includes("{sub:alice}")));
        expect(calls).toHaveLength(N);
        expect(calls.every((args) => args[0]!.toLowerCase() === "evalsha")).toBe(true);
        expect(
          ours.filter((args) => !["quit", "client", "info", "ping"].includes(args[0]!.toLowerCase())),
        ).toHaveLength(N);
      },
    );
  },
);
