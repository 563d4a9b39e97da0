/**
 * The benchmark's upstream: nginx answering `GET /v1/user` from its configuration (issue 17 measured
 * with nginx as upstream), one process on the load core, so the server core holds only the proxy
 * under test. Without nginx on PATH, the Node upstream (`upstream.ts`) takes its place on the same
 * core and the report says so.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { freePorts } from "../helpers/child-gateway.js";
import { hasCommand, LOAD_CORE, spawnServer, waitForPort } from "./procs.js";
import type { Target } from "./targets.js";
import { NOT_FOUND_JSON, USER_JSON } from "./user-doc.js";

/** True when nginx can serve as the upstream. */
export const hasNginx = hasCommand("nginx");

/** nginx's configuration: one process, no access log, keep-alive without a request cap. */
function nginxConf(dir: string, port: number): string {
  const q = (s: string) => `'${s.replace(/'/g, "\\'")}'`;
  return `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  server_tokens off;
  keepalive_requests 100000000;
  keepalive_timeout 65s;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port};
    default_type application/json;
    location = /v1/user { return 200 ${q(USER_JSON)}; }
    location / { return 404 ${q(NOT_FOUND_JSON)}; }
  }
}
`;
}

/** Starts nginx on the load core with its files under `dir`. */
export async function startNginxUpstream(dir: string): Promise<Target> {
  const home = path.join(dir, "nginx");
  mkdirSync(home, { recursive: true });
  const [port] = (await freePorts(1)) as [number];
  const conf = path.join(home, "nginx.conf");
  writeFileSync(conf, nginxConf(home, port));
  const child = spawnServer("nginx", "nginx", ["-p", home, "-c", conf, "-e", path.join(home, "error.log")], {
    core: LOAD_CORE,
  });
  await waitForPort(child, port);
  return { child, url: `http://127.0.0.1:${port}` };
}
