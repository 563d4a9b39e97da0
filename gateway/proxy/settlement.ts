/**
 * A promise whose resolver is kept by the object it settles, made without a closure per promise:
 * the executor runs synchronously inside `new Promise`, so one shared executor can hand the resolver
 * to the object being constructed (one allocation less per proxied call).
 */

/** An object that keeps its own promise's resolver. */
export interface Settles<T> {
  resolve: ((value: T) => void) | null;
}

let receiver: Settles<never> | null = null;

function executor(resolve: (value: never) => void): void {
  receiver!.resolve = resolve;
}

/** @returns a promise that `owner.resolve` settles */
export function settlement<T>(owner: Settles<T>): Promise<T> {
  receiver = owner as Settles<never>;
  try {
    return new Promise<T>(executor as (resolve: (value: T) => void) => void);
  } finally {
    receiver = null;
  }
}
