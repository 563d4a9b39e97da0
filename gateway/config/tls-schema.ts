/** `listen.tls` (SPEC §12): the API listener's certificate, protocol floor and mutual TLS. */
import { z } from "zod";

const file = z.string().min(1);

/** `listen.tls`: optional; without it the API listener is plain HTTP/1.1. */
export const listenTlsSchema = z.strictObject({
  cert_file: file.describe("PEM certificate chain, leaf first; re-read on SIGHUP."),
  key_file: file.describe("PEM private key of `cert_file`; re-read on SIGHUP."),
  min_version: z.enum(["TLSv1.2", "TLSv1.3"]).default("TLSv1.2").describe("Oldest TLS version accepted."),
  client_ca_file: file
    .optional()
    .describe("PEM CAs of client certificates: when set, a client must present one (mutual TLS)."),
});
