/**
 * Benchmark OTLP/HTTP collector stand-in (child process, on the load core: a real collector has
 * its own host): accepts `POST /v1/traces`, reads the body, answers 200 with an empty
 * ExportTraceServiceResponse. It does not decode (the tests do, against a real receiver); it
 * counts export requests and body bytes, printed on SIGTERM. Usage: `collector-sink.ts <port>`.
 */
import http from "node:http";

const port = Number(process.argv[2]);
let requests = 0;
let bytes = 0;

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  req.on("data", (c: Buffer) => (bytes += c.length));
  req.on("end", () => {
    requests++;
    res.writeHead(200, { "content-type": "application/x-protobuf", "content-length": 0 });
    res.end();
  });
});
server.listen(port, "127.0.0.1");
process.on("SIGTERM", () => {
  process.stderr.write(`collector-sink: ${requests} export requests, ${bytes} bytes\n`);
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
