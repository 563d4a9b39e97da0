/**
 * `npm run demo`: the example docs upstream on 127.0.0.1:3000 and the gateway on
 * `config/demo.yaml` (memory store, static demo token, a small write limit), then the curl lines.
 */
import { loadConfig } from "../config/load.js";
import { endpointsOf } from "../config/upstream-schema.js";
import { createDocsUpstream } from "./example-upstream.js";
import { DEMO_CONFIG } from "./demo-config.js";
import { createGateway } from "../server/server.js";

const file = process.env.GATEWAY_CONFIG ?? DEMO_CONFIG;
const loaded = loadConfig(file);
const upstreamUrl = new URL(endpointsOf(Object.values(loaded.config.upstreams)[0]!)[0]!.url);
const upstream = createDocsUpstream();
const gateway = createGateway(loaded);
let apiPort: number;
let adminPort: number;
try {
  await new Promise<void>((resolve, reject) => {
    upstream.once("error", (err: NodeJS.ErrnoException) =>
      reject(
        new Error(`the example upstream cannot bind ${upstreamUrl.host} (upstreams.docs.url): ${err.code}`),
      ),
    );
    upstream.listen(Number(upstreamUrl.port), upstreamUrl.hostname, resolve);
  });
  ({ apiPort, adminPort } = await gateway.listen());
} catch (err) {
  // A port taken (README "Quick start" says how to move them): say which, and stop.
  console.error(`demo could not start: ${(err as Error).message}; see README "The demo's ports"`);
  process.exit(1);
}
const base = `http://127.0.0.1:${apiPort}`;
console.log(`
Demo gateway on ${base} (admin http://127.0.0.1:${adminPort}), upstream ${upstreamUrl.origin}. Try:

  curl -i -H 'Authorization: Bearer demo-token' ${base}/v1/user          # 200 + X-RateLimit-*
  curl -i ${base}/v1/user                                                # 401, headers too
  for i in 1 2 3 4; do curl -s -o /dev/null -w '%{http_code}\\n' -X POST -H 'Authorization: Bearer demo-token' ${base}/v1/spaces/handbook/pages; done
  curl -i -X POST -H 'Authorization: Bearer demo-token' ${base}/v1/spaces/handbook/pages   # 429 + exact body
  curl -s -H 'Authorization: Bearer demo-token' ${base}/rate_limit
  curl -s http://127.0.0.1:${adminPort}/metrics | grep gateway_requests_total

Ctrl-C stops.`);
const stop = () => {
  upstream.close();
  gateway.close(1000).then(() => process.exit(0));
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
