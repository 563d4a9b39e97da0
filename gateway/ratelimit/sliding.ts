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
  /** Room for one more call of its cost. */
  fits: boolean;
  /**
   * Units left (integer, >= 0): after this call when it counts and fits, else now (SPEC §22: on a
   * refusal for lack of units, what is left, which may be more than 0).
   */
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
 * Decides one `sliding_window` window for a call of `cost` units (state must be rolled to now).
 *
 * Reset (SPEC §3): while units remain after this call (or, when peeking, whenever the call fits),
 * the end of the current fixed window, so never more than the window length ahead; when this call
 * used the last unit, or the call does not fit, the earliest time one more call of `cost` fits.
 * @param count - true for a call that counts; false for a peek (`GET /rate_limit`) or a verdict
 *   after a charge (whose units are already in `s.curr`)
 * @param cost - units a call spends (SPEC §22) @default 1
 */
export function counterVerdict(
  s: CounterState,
  nowMs: number,
  windowMs: number,
  limit: number,
  count: boolean,
  cost = 1,
): WindowVerdict {
  const estimate = s.prev * (1 - (nowMs - s.startMs) / windowMs) + s.curr;
  const left = Math.floor(limit - estimate);
  if (estimate + cost <= limit) {
    if (!count) return { fits: true, remaining: Math.max(0, left), resetAtMs: s.startMs + windowMs };
    const remaining = Math.max(0, left - cost);
    return {
      fits: true,
      remaining,
      resetAtMs:
        remaining > 0
          ? s.startMs + windowMs
          : counterFreeAt(
              { startMs: s.startMs, prev: s.prev, curr: s.curr + cost },
              nowMs,
              windowMs,
              limit - cost,
            ),
    };
  }
  return {
    fits: false,
    remaining: Math.max(0, left),
    resetAtMs: counterFreeAt(s, nowMs, windowMs, limit - cost),
  };
}

/**
 * Decides one `sliding_log` window for a call of `cost` units (one entry per unit).
 * `times[head..]` holds admitted unit times (ms, ascending) already trimmed to
 * `(nowMs - windowMs, nowMs]`.
 *
 * Reset (SPEC §3): when the oldest counted unit leaves the window (now + the window when there is
 * none); when this call used the last unit, once `cost` units (its own come last) have left; for a
 * call that does not fit, when enough units have left for it to fit. Both are the earliest
 * admission time when nothing remains, and never more than the window length ahead.
 * @param count - true for a call that counts; false for a peek or a verdict after a charge
 * @param cost - units a call spends (SPEC §22) @default 1
 */
export function logVerdict(
  times: readonly number[],
  head: number,
  nowMs: number,
  windowMs: number,
  limit: number,
  count = true,
  cost = 1,
): WindowVerdict {
  const n = times.length - head;
  if (n + cost <= limit) {
    const remaining = count ? limit - n - cost : limit - n;
    let from: number;
    if (count && remaining === 0) from = cost <= n ? times[head + cost - 1]! : nowMs;
    else from = n > 0 ? times[head]! : nowMs;
    return { fits: true, remaining, resetAtMs: from + windowMs };
  }
  // n + cost - limit entries must expire before the call fits (the latest of them: clamped when
  // a divided limit is below the cost while failing open, and the call can never fit).
  const i = Math.min(n - 1, n + cost - limit - 1);
  return {
    fits: false,
    remaining: Math.max(0, limit - n),
    resetAtMs: (i >= 0 ? times[head + i]! : nowMs) + windowMs,
  };
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
