/**
 * The webhook signature (SPEC §21): `X-Gateway-Signature: sha256=<hex>`, the HMAC-SHA256 (RFC 2104,
 * `node:crypto`) of the exact body bytes with the webhook's secret, as GitHub signs its webhooks.
 */
import { createHmac } from "node:crypto";

/** @returns `sha256=<lower-case hex HMAC-SHA256 of body>` */
export function signatureOf(body: string, secret: Buffer): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}
