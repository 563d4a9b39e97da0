import { describe, expect, it } from "vitest";
import { stripHopByHop } from "../../gateway/proxy/forwarded-headers.js";
import type { HeaderMap } from "../../gateway/base/request-facts.js";

describe("stripHopByHop (RFC 9110 §7.6.1)", () => {
  it("removes the fixed hop-by-hop fields and keeps the rest", () => {
    const h: HeaderMap = {
      connection: "keep-alive",
      "keep-alive": "timeout=5",
      "content-type": "a/b",
      te: "x",
    };
    stripHopByHop(h);
    expect(h).toEqual({ "content-type": "a/b" });
  });

  it("removes a single field Connection names, whatever its case and spaces", () => {
    const h: HeaderMap = { connection: " X-Solo ", "x-solo": "1", "x-other": "2" };
    stripHopByHop(h);
    expect(h).toEqual({ "x-other": "2" });
  });

  it("removes every field of a Connection list, and of repeated Connection fields", () => {
    const listed: HeaderMap = { connection: "Keep-Alive, x-a,x-b", "x-a": "1", "x-b": "2", "x-c": "3" };
    stripHopByHop(listed);
    expect(listed).toEqual({ "x-c": "3" });
    const repeated: HeaderMap = { connection: ["x-a", "close"], "x-a": "1", "x-c": "3" };
    stripHopByHop(repeated);
    expect(repeated).toEqual({ "x-c": "3" });
  });

  it("keeps Connection: Upgrade and Upgrade for a handshake, and still drops what else it names", () => {
    const h: HeaderMap = { connection: "Upgrade, x-a", upgrade: "websocket", "x-a": "1", "keep-alive": "t" };
    stripHopByHop(h, true);
    expect(h).toEqual({ connection: "Upgrade, x-a", upgrade: "websocket" });
  });
});
