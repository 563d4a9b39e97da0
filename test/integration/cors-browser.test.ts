/**
 * CORS from a real browser (SPEC §14): headless Chromium (Debian's `chromium`, driven
 * by playwright-core) loads a page from an allowed origin on loopback; the page calls the gateway
 * with `fetch` and a bearer token (so the browser sends a real preflight), reads
 * `X-RateLimit-Remaining` from a 200, the JSON body and `Retry-After` of a 429; the same call from a
 * page of a disallowed origin is refused by the browser.
 *
 * Needs `/usr/bin/chromium` (`apt-get install chromium`; `.ci/run` installs it). Without it the test
 * is skipped with a note, except under CI, where it fails.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, testConfig, type TestGateway } from "../helpers/gateway.js";
import { closeServer, listen } from "../helpers/http.js";

const CHROMIUM = "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === "true")
  throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
if (!available)
  console.error("cors-browser: /usr/bin/chromium not found, skipping (apt-get install chromium)");

let upstream: Awaited<ReturnType<typeof listen>>;
let pages: Awaited<ReturnType<typeof listen>>;
let gw: TestGateway;
let browser: Browser;
/** The page origins: both serve the same page; only the first is allowed. */
let allowedOrigin: string;
let otherOrigin: string;

beforeAll(async () => {
  if (!available) return;
  upstream = await listen((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"login":"alice"}');
  });
  pages = await listen((_req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<!doctype html><title>client</title><p>API client page</p>");
  });
  const port = (pages.server.address() as { port: number }).port;
  // One server, two origins: 127.0.0.1 and localhost are different origins to a browser.
  allowedOrigin = `http://127.0.0.1:${port}`;
  otherOrigin = `http://localhost:${port}`;
  gw = await startGateway(
    testConfig(upstream.url, {
      cors: { allowed_origins: [allowedOrigin] },
      rate_limits: { classes: { read: { windows: [{ limit: 2, window_s: 3600 }] } } },
    }),
  );
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-quic",
    ],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
  if (upstream !== undefined) await closeServer(upstream.server);
  if (pages !== undefined) await closeServer(pages.server);
});

interface Seen {
  status: number;
  remaining: string | null;
  retryAfter: string | null;
  body: unknown;
}

/** Runs `fetch` from a page of `origin`: what the page's script could read, or the error it got. */
async function callFrom(origin: string, times: number): Promise<Seen[] | string> {
  const page = await browser.newPage();
  try {
    await page.goto(`${origin}/`);
    return await page.evaluate(
      async ({ url, times }) => {
        const seen = [];
        try {
          for (let i = 0; i < times; i++) {
            const res = await fetch(url, { headers: { Authorization: "Bearer valid-token" } });
            seen.push({
              status: res.status,
              remaining: res.headers.get("X-RateLimit-Remaining"),
              retryAfter: res.headers.get("Retry-After"),
              body: await res.json(),
            });
          }
          return seen;
        } catch (err) {
          return String(err);
        }
      },
      { url: `${gw.url}/v1/user`, times },
    );
  } finally {
    await page.close();
  }
}

describe.skipIf(!available)("a browser page calling the gateway", () => {
  it("reads the rate-limit headers of a 200 and the body and Retry-After of a 429 from an allowed origin", async () => {
    const seen = await callFrom(allowedOrigin, 3);
    expect(seen).toEqual([
      { status: 200, remaining: "1", retryAfter: null, body: { login: "alice" } },
      { status: 200, remaining: "0", retryAfter: null, body: { login: "alice" } },
      {
        status: 429,
        remaining: "0",
        retryAfter: expect.stringMatching(/^\d+$/),
        body: {
          error: {
            code: 429,
            message: expect.stringMatching(/^API rate limit exceeded\. Please try again in \d+ seconds$/),
          },
        },
      },
    ]);
  });

  it("is refused by the browser from a disallowed origin", async () => {
    const seen = await callFrom(otherOrigin, 1);
    expect(seen).toMatch(/TypeError: Failed to fetch/);
  });
});
