/**
 * A request leaves the configuration it started on when it finishes, whatever its observers do:
 * an observer that throws must not keep a replaced configuration alive (its endpoints, limiter
 * and tracing are released when its last request leaves).
 */
import { describe, expect, it } from "vitest";
import { systemClock } from "../../gateway/base/clock.js";
import { Generation } from "../../gateway/core/generation.js";
import type { Runtime } from "../../gateway/core/runtime.js";
import { RequestScope } from "../../gateway/core/scope.js";
import type { FinishObserver } from "../../gateway/observability/finished-request.js";

function scopeOn(generation: Generation, observers: FinishObserver[]): RequestScope {
  const runtime = { generation, clock: systemClock } as unknown as Runtime;
  return new RequestScope("r1", "GET", "1.1", systemClock.monotonicMs(), runtime, observers);
}

describe("RequestScope.finish", () => {
  it("leaves its configuration once, after the observers", () => {
    const generation = new Generation();
    const seen: number[] = [];
    const scope = scopeOn(generation, [{ onFinish: () => seen.push(generation.calls) }]);
    expect(generation.calls).toBe(1);
    scope.finish(200);
    scope.finish(200);
    expect(seen).toEqual([1]);
    expect(generation.calls).toBe(0);
  });

  it("leaves it even when an observer throws, so a retired configuration is released", () => {
    const generation = new Generation();
    const scope = scopeOn(generation, [
      {
        onFinish: () => {
          throw new Error("observer bug");
        },
      },
    ]);
    let released = false;
    generation.retire(() => (released = true));
    expect(released).toBe(false);
    expect(() => scope.finish(500)).toThrow("observer bug");
    expect(generation.calls).toBe(0);
    expect(released).toBe(true);
  });
});
