/**
 * `describeRedisError` (gateway/ratelimit/store-failure.ts): the reason label and the detail of a
 * failed Redis call, from the error shapes Node and ioredis produce. The integration test
 * `redis-failures-name-their-cause` meets the common ones on real servers; this covers the rest.
 */
import { describe, expect, it } from "vitest";
import { ReplyTimeoutError } from "../../gateway/ratelimit/reply-watch.js";
import { describeRedisError } from "../../gateway/ratelimit/store-failure.js";

function systemError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

describe("describeRedisError", () => {
  it.each([
    [systemError("ECONNREFUSED", "connect ECONNREFUSED 10.0.0.5:6379"), "refused"],
    [systemError("ENOTFOUND", "getaddrinfo ENOTFOUND redis.internal"), "dns"],
    [systemError("EAI_AGAIN", "getaddrinfo EAI_AGAIN redis.internal"), "dns"],
    [systemError("ERR_SSL_WRONG_VERSION_NUMBER", "wrong version number"), "tls"],
    [systemError("DEPTH_ZERO_SELF_SIGNED_CERT", "self-signed certificate"), "tls"],
    [systemError("ERR_TLS_CERT_ALTNAME_INVALID", "Hostname/IP does not match certificate's altnames"), "tls"],
    [
      systemError(
        "ECONNRESET",
        "Client network socket disconnected before secure TLS connection was established",
      ),
      "tls",
    ],
    [new Error("WRONGPASS invalid username-password pair or user is disabled."), "auth"],
    [new Error("Ready check failed: NOAUTH Authentication required."), "auth"],
    [Object.assign(new Error("ERR DB index is out of range"), { command: { name: "select" } }), "database"],
    [systemError("ECONNRESET", "read ECONNRESET"), "connection"],
    [new Error("Connection is closed."), "connection"],
    [new Error("Stream isn't writeable and enableOfflineQueue options is false"), "connection"],
    [new Error("Reached the max retries per request limit (which is 1). Refer to ..."), "connection"],
    [new Error("OOM command not allowed when used memory > 'maxmemory'."), "reply"],
    [new ReplyTimeoutError(100, true), "timeout"],
  ])("%s -> %s", (err, reason) => {
    const f = describeRedisError(err);
    expect(f.reason).toBe(reason);
    expect(f.detail).toContain(err.message);
  });
});
