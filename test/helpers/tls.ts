/**
 * Real certificates for TLS tests, made per test run with the `openssl` CLI: a private CA, a server
 * certificate for `localhost` and 127.0.0.1 signed by it, and a client certificate.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/** File paths and PEM contents of one test PKI. */
export interface TestPki {
  dir: string;
  caFile: string;
  serverCertFile: string;
  serverKeyFile: string;
  clientCertFile: string;
  clientKeyFile: string;
  /** PEM contents, for servers started in-process. */
  ca: Buffer;
  serverCert: Buffer;
  serverKey: Buffer;
  /**
   * Signs another server certificate (same names, a new serial) with the CA.
   * @returns the paths of its certificate and key
   */
  issueServer(name: string): { certFile: string; keyFile: string };
  remove(): void;
}

const SERVER_EXT = "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n";

function openssl(dir: string, ...args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
}

/** Creates a CA, a server certificate (SAN localhost, 127.0.0.1) and a client certificate. */
export function createPki(): TestPki {
  const dir = mkdtempSync(path.join(tmpdir(), "gw-pki-"));
  openssl(
    dir,
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-days",
    "2",
    "-subj",
    "/CN=Gateway Test CA",
  );
  const leaf = (name: string, subject: string, ext: string): void => {
    writeFileSync(path.join(dir, `${name}.ext`), ext);
    openssl(
      dir,
      "req",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.csr`,
      "-subj",
      subject,
    );
    openssl(
      dir,
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      `${name}.crt`,
      "-days",
      "2",
      "-extfile",
      `${name}.ext`,
    );
  };
  leaf("server", "/CN=localhost", SERVER_EXT);
  leaf("client", "/O=Gateway Tests/CN=gateway", "extendedKeyUsage=clientAuth\n");
  const file = (n: string) => path.join(dir, n);
  return {
    dir,
    caFile: file("ca.crt"),
    serverCertFile: file("server.crt"),
    serverKeyFile: file("server.key"),
    clientCertFile: file("client.crt"),
    clientKeyFile: file("client.key"),
    ca: readFileSync(file("ca.crt")),
    serverCert: readFileSync(file("server.crt")),
    serverKey: readFileSync(file("server.key")),
    issueServer(name: string) {
      leaf(name, "/CN=localhost", SERVER_EXT);
      return { certFile: file(`${name}.crt`), keyFile: file(`${name}.key`) };
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A `listen` block for a TLS (h2 + http/1.1) API listener on 127.0.0.1:0 with `pki`'s server certificate. */
export function tlsListen(pki: TestPki, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    host: "127.0.0.1",
    port: 0,
    grace_ms: 1000,
    tls: { cert_file: pki.serverCertFile, key_file: pki.serverKeyFile },
    ...extra,
  };
}
