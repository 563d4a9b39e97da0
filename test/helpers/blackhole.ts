/**
 * A port that never completes a TCP handshake: a child listens with backlog 1 and blocks its event
 * loop, so it never accepts; two connections fill the accept queue and later SYNs are dropped. (A
 * "non-routable" address is no good here: this sandbox answers every outbound connect at once.)
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import net from "node:net";

/** A running blackhole; `close()` kills the child and drops the fillers. */
export interface Blackhole {
  child: ChildProcess;
  port: number;
  fillers: net.Socket[];
  close(): void;
}

/** Starts a blackhole on 127.0.0.1. */
export async function startBlackhole(): Promise<Blackhole> {
  const child = spawn(
    process.execPath,
    [
      "-e",
      "const s=require('net').createServer().listen({port:0,host:'127.0.0.1',backlog:1},()=>{" +
        "console.log(s.address().port);Atomics.wait(new Int32Array(new SharedArrayBuffer(4)),0,0)})",
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const [data] = (await once(child.stdout!, "data")) as [Buffer];
  const port = Number(String(data).trim());
  const fillers: net.Socket[] = [];
  for (let i = 0; i < 2; i++) {
    const s = net.connect(port, "127.0.0.1");
    s.on("error", () => {});
    await once(s, "connect");
    fillers.push(s);
  }
  return {
    child,
    port,
    fillers,
    close() {
      for (const s of fillers) s.destroy();
      child.kill("SIGKILL");
    },
  };
}
