/**
 * The two sliding-window algorithms as pure functions over plain state, shared by the memory store
 * (and mirrored line by line in `lua/*.lua` for Redis).
 *
 * - `sliding_window`: the weighted two-counter estimate of Cloudflare's "How we built rate limiting
 *   capable of scaling to millions of domains" (2017): `estimate = prev * (1 - elapsed/W) + curr`.
 * - `sliding_log`: exact; one timestamp per admitted call (Figma/Redis sorted-set log).
 *
 * All times are epoch milliseconds; `windowMs = windowS * 1000`.
 */

/** Counter state of one `sliding_window` window. */
export interface CounterState {
  /** Start of the current fixed window (ms), a multiple of `windowMs`. */
  startMs: number;
  prev: number;
  curr: number;
}

/** Per-window result used to combine windows. */
export interface WindowVerdict {
  /** Room for one more call. */
  fits: boolean;
  /** Remaining after counting this call (allowed) or 0 (rejected), integer. */
  remaining: number;
  /** When capacity next frees (ms): for a rejected call, when it would fit. */
  resetAtMs: number;
}

/** Rolls a counter state forward to the fixed window containing `nowMs`. */
export function rollCounter(s: CounterState, nowMs: number, windowMs: number): void {
  const start = nowMs - (nowMs % windowMs);
  if (start === s.startMs) return;
  s.prev = start - s.startMs === windowMs ? s.curr : 0;
  s.curr = 0;
  s.startMs = start;
}

/**
 * Earliest time at which the estimate drops to `target` or below, assuming no new calls: solve
 * `prev * (1 - (t - start)/W) + curr <= target` within the current window, else
 * `curr * (1 - (t - start - W)/W) <= target` in the next one.
 */
export function counterFreeAt(s: CounterState, nowMs: number, windowMs: number, target: number): number {
  const elapsed = nowMs - s.startMs;
  if (s.prev * (1 - elapsed / windowMs) + s.curr <= target) return nowMs;
  if (s.curr <= target && s.prev > 0) {
    return Math.max(nowMs, s.startMs + Math.ceil(windowMs * (1 - (target - s.curr) / s.prev)));
  }
  return s.startMs + windowMs + Math.ceil(windowMs * (1 - target / s.curr));
}

/**
 * Decides one `sliding_window` window for a call of weight 1 (state must be rolled to now).
 *
 * Reset (SPEC §3): while calls remain after this one (or, when peeking, whenever one more call
 * fits), the end of the current fixed window, so never more than the window length ahead; when
 * this call used the last unit, or the call does not fit, the earliest time one more call fits.
 * @param count - true for a call that counts; false for a peek (`GET /rate_limit`)
 */
export function counterVerdict(
  s: CounterState,
  nowMs: number,
  windowMs: number,
  limit: number,
  count: boolean,
): WindowVerdict {
  const estimate = s.prev * (1 - (nowMs - s.startMs) / windowMs) + s.curr;
  if (estimate + 1 <= limit) {
    const remaining = Math.max(0, Math.floor(limit - estimate - 1));
    return {
      fits: true,
      remaining,
      resetAtMs:
        remaining > 0 || !count
          ? s.startMs + windowMs
          : counterFreeAt({ startMs: s.startMs, prev: s.prev, curr: s.curr + 1 }, nowMs, windowMs, limit - 1),
    };
  }
  return { fits: false, remaining: 0, resetAtMs: counterFreeAt(s, nowMs, windowMs, limit - 1) };
}

/**
 * Decides one `sliding_log` window. `times[head..]` holds admitted call times (ms, ascending)
 * already trimmed to `(nowMs - windowMs, nowMs]`.
 *
 * Reset (SPEC §3): when the oldest counted call leaves the window (this call, when it is the only
 * one); for a call that does not fit, when enough calls have left for one more to fit. Both are the
 * earliest admission time when no call remains, and never more than the window length ahead.
 */
export function logVerdict(
  times: readonly number[],
  head: number,
  nowMs: number,
  windowMs: number,
  limit: number,
): WindowVerdict {
  const n = times.length - head;
  if (n < limit) {
    return { fits: true, remaining: limit - n - 1, resetAtMs: (n > 0 ? times[head]! : nowMs) + windowMs };
  }
  // n - limit + 1 entries must expire before one more fits.
  return { fits: false, remaining: 0, resetAtMs: times[head + n - limit]! + windowMs };
}

/**
 * Picks the window to report: when rejected, the non-fitting window that frees last; when
 * admitted, the one with the fewest remaining (ties: the later reset).
 */
export function pickReported(verdicts: readonly WindowVerdict[], allowed: boolean): number {
  let best = -1;
  for (let i = 0; i < verdicts.length; i++) {
    const v = verdicts[i]!;
    if (!allowed && v.fits) continue;
    if (best === -1) {
      best = i;
      continue;
    }
    const b = verdicts[best]!;
    if (
      allowed
        ? v.remaining < b.remaining || (v.remaining === b.remaining && v.resetAtMs > b.resetAtMs)
        : v.resetAtMs > b.resetAtMs
    ) {
      best = i;
    }
  }
  return best;
}
