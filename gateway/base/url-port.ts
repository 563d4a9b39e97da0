/** The port an `http:`/`https:` URL connects to: its own, or the scheme's default (80, 443). */
export function urlPort(u: URL): number {
  return u.port === "" ? (u.protocol === "https:" ? 443 : 80) : Number(u.port);
}
