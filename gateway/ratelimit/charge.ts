/**
 * The units an upstream answer charges (SPEC §22 `charge`): the configured header's value, a
 * non-negative integer in decimal digits, capped at `max`. Anything else (missing, repeated,
 * malformed, negative) charges nothing and is reported as invalid.
 */

/** Up to 15 digits: every such value is a safe integer, and any cap is reached long before. */
const DIGITS = /^[0-9]{1,15}$/;

/**
 * @param value - the header as Node parsed it (undefined when absent, an array when repeated)
 * @param max - `charge.max`
 * @returns the units to charge (0 charges nothing), or null when the value is not usable
 */
export function chargedUnits(value: string | string[] | undefined, max: number): number | null {
  if (typeof value !== "string") return null;
  const v = value.trim();
  if (!DIGITS.test(v)) {
    // A long run of digits is still a number: capped like any other.
    return /^[0-9]+$/.test(v) ? max : null;
  }
  return Math.min(Number(v), max);
}
