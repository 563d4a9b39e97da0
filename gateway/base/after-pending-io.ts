/**
 * Decisions a timer makes about I/O, taken only after the I/O that had already arrived is read.
 * Timers run before the poll phase that reads sockets, so on a busy event loop a timer can fire
 * while the answer it waits for sits unread in a socket. The decision waits for two
 * `setImmediate`s: the first runs after the poll phase of the timer's own loop iteration, the
 * second after the next one, which reads everything that reached the socket before the first (the
 * rule of the Redis store's reply watch, `ratelimit/reply-watch.ts`, SPEC §4: a timeout measures
 * what it names, not the gateway's own queue).
 */

/**
 * Calls `decide(arg)` once the pending I/O has been read (no closure: the argument travels with
 * the immediates). `decide` must look again at what it decides about: the answer may have come.
 */
export function afterPendingIo<T>(decide: (arg: T) => void, arg: T): void {
  setImmediate(secondPass<T>, decide, arg);
}

function secondPass<T>(decide: (arg: T) => void, arg: T): void {
  setImmediate(decide, arg);
}
