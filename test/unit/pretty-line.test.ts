import { describe, expect, it } from "vitest";
import { prettyMessage } from "../../gateway/observability/pretty-line.js";

const access = {
  level: 30,
  msg: "request",
  method: "GET",
  path: "/v1/user",
  status: 200,
  durationMs: 3.14,
  identity: "alice",
  class: "read",
  remaining: 99,
  reqId: "r1",
};

describe("log.format: pretty", () => {
  it("prints an access line as one summary line, its other fields only with details", () => {
    expect(prettyMessage(false)(access, "msg")).toBe("GET /v1/user 200 3.1ms alice read remaining=99");
    expect(prettyMessage(true)(access, "msg")).toBe(
      'GET /v1/user 200 3.1ms alice read remaining=99 {"reqId":"r1"}',
    );
  });

  it("names the refusing window of a 429", () => {
    const refused = { ...access, status: 429, remaining: 0, window: "month", limited_by: "identity" };
    expect(prettyMessage(false)(refused, "msg")).toBe(
      "GET /v1/user 429 3.1ms alice read remaining=0 window=month",
    );
  });

  it("prints other lines as their message and their fields", () => {
    expect(prettyMessage(false)({ level: 30, msg: "gateway listening", port: 8080 }, "msg")).toBe(
      'gateway listening {"port":8080}',
    );
  });
});
