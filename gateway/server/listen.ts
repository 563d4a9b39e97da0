/**
 * Binding a listener (a port that cannot be bound stops the gateway, naming the listener
 * and the port). `server.listen` reports a bind failure as an `error` event whose message
 * (`listen EADDRINUSE: address already in use 0.0.0.0:8080`) names neither the listener nor the
 * configuration key; {@link ListenError} carries both.
 */
import type { Server } from "node:net";

/** Which of the gateway's listeners: the API one (`listen`), the admin one, or the decision one. */
export type ListenerName = "api" | "admin" | "decision";

const KEYS: Record<ListenerName, string> = { api: "listen", admin: "admin", decision: "decision.listen" };

/** A listener could not bind its address. */
export class ListenError extends Error {
  /**
   * @param listener - which listener
   * @param host - the interface it was to bind
   * @param port - the TCP port it was to bind
   * @param code - the system error code (`EADDRINUSE`, `EACCES`, `EADDRNOTAVAIL`, ...)
   */
  constructor(
    readonly listener: ListenerName,
    readonly host: string,
    readonly port: number,
    readonly code: string | undefined,
    options?: { cause?: unknown },
  ) {
    const key = KEYS[listener];
    super(
      `the ${listener} listener cannot bind ${host}:${port} (${key}.host, ${key}.port): ${code ?? "error"}` +
        (code === "EADDRINUSE" ? " (another process holds the port)" : ""),
      options,
    );
    this.name = "ListenError";
  }

  /** Fields for a structured log line. */
  toFields(): { listener: ListenerName; host: string; port: number; code: string | undefined } {
    return { listener: this.listener, host: this.host, port: this.port, code: this.code };
  }
}

/**
 * Binds `server` to `host:port`.
 * @throws ListenError when the address cannot be bound
 */
export function listenOn(server: Server, listener: ListenerName, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void =>
      reject(new ListenError(listener, host, port, err.code, { cause: err }));
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      resolve();
    });
  });
}
