/**
 * The Redis store's own command timeout (`gateway/ratelimit/reply-watch.ts`, SPEC §4): a reply
 * that reached the socket while the event loop was blocked is read before any verdict; a late
 * reply is waited for while replies keep coming; a silent peer fails the waiting calls after a
 * late call and one more timeout with nothing, never before. Real sockets on loopback.
 */
import net from "node:net";
import { once } from "node:events";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ReplyTimeoutError, ReplyWatch } from "../../gateway/ratelimit/reply-watch.js";

let server: net.Server;
let port = 0;

beforeAll(async () => {
  // Answers every chunk at once, like an idle Redis.
  server = net.createServer((s) => s.on("data", (d) => s.write(d)));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  port = (server.address() as net.AddressInfo).port;
});

afterAll(() => server.close());

/** Busy-waits: the event loop reads nothing meanwhile (a replica saturated by a burst). */
function block(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

it("reads a reply that reached the socket while the loop was blocked, instead of timing it out", async () => {
  const socket = net.connect(port, "127.0.0.1");
  await once(socket, "connect");
  const watch = new ReplyWatch(50);
  const reply = new Promise<string>((resolve) => socket.once("data", (d) => resolve(d.toString())));
  const tracked = watch.track(reply);
  socket.write("PING\r\n");
  watch.sent();
  // The echo arrives within a millisecond; the loop cannot read it for three timeouts, and the
  // timer is due before the poll phase that will.
  block(150);
  await expect(tracked).resolves.toBe("PING\r\n");
  watch.close();
  socket.destroy();
});

it("waits for late replies while replies keep coming", async () => {
  const watch = new ReplyWatch(100);
  const settle: Array<() => void> = [];
  const calls = Array.from({ length: 8 }, () =>
    watch.track(new Promise<void>((resolve) => settle.push(resolve))),
  );
  watch.sent();
  // Every call is late (the first reply comes after 1.2 timeouts), but replies then come every
  // fifth of a timeout: a slow Redis working through its queue, not a dead one.
  await new Promise((r) => setTimeout(r, 120));
  for (const s of settle) {
    s();
    await new Promise((r) => setTimeout(r, 20));
  }
  await expect(Promise.all(calls)).resolves.toHaveLength(8);
  watch.close();
});

it("fails the waiting calls when nothing comes for a command timeout after a call was late", async () => {
  const watch = new ReplyWatch(40);
  const started = performance.now();
  const calls = [watch.track(new Promise(() => {})), watch.track(new Promise(() => {}))];
  watch.sent();
  const outcomes = await Promise.allSettled(calls);
  const waited = performance.now() - started;
  for (const o of outcomes) {
    expect(o.status).toBe("rejected");
    expect((o as PromiseRejectedResult).reason).toBeInstanceOf(ReplyTimeoutError);
  }
  expect(String((outcomes[0] as PromiseRejectedResult).reason.message)).toMatch(
    /no reply within 40 ms of the command's write, then nothing from Redis for 40 ms more/,
  );
  // Two timeouts: late at one, declared silent at two (never after one).
  expect(waited).toBeGreaterThanOrEqual(80);
  watch.close();
});

it("holds only the calls in flight: a settled call leaves at once, out-of-order ones behind the oldest", async () => {
  // A command timeout far longer than the test: nothing here may depend on the timer firing.
  const watch = new ReplyWatch(60_000);
  for (let i = 0; i < 2_000; i++) {
    const tracked = watch.track(Promise.resolve(i));
    watch.sent();
    await expect(tracked).resolves.toBe(i);
    expect(watch.held).toBe(0);
  }
  const settle: Array<() => void> = [];
  const calls = Array.from({ length: 3 }, () =>
    watch.track(new Promise<void>((resolve) => settle.push(resolve))),
  );
  watch.sent();
  settle[2]!();
  await calls[2];
  expect(watch.held).toBe(3); // the newest settled behind two still waiting
  settle[0]!();
  await calls[0];
  expect(watch.held).toBe(2);
  settle[1]!();
  await calls[1];
  expect(watch.held).toBe(0);
  watch.close();
});

it("bounds a command it does not wrap: begin() fails it through its own reject, end() takes it off", async () => {
  const watch = new ReplyWatch(40);
  // A command answered in time: end() takes it off the watch, nothing is failed later.
  const failedInTime: Error[] = [];
  const inTime = watch.begin((err) => failedInTime.push(err));
  watch.sent();
  watch.end(inTime);
  expect(watch.held).toBe(0);
  // A silent one: failed with ReplyTimeoutError through the function begin() was given.
  const failed = new Promise<Error>((resolve) => watch.begin(resolve));
  watch.sent();
  const err = await failed;
  expect(err).toBeInstanceOf(ReplyTimeoutError);
  expect(failedInTime).toEqual([]);
  expect(watch.held).toBe(0);
  watch.close();
});
