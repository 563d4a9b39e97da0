/**
 * `node --import tsx test/bench/admission.ts`: what SPEC §18 adds per call when
 * enabled, measured in this process: one admission (priority from the plan, the share check), one
 * latency sample into the adaptive limit and one release, against the same loop with no admission
 * (what a request pays without the blocks: one null check). Prints ns per call, median of 7 rounds.
 */
import { Counter, Registry } from "prom-client";
import { systemClock } from "../../gateway/base/clock.js";
import { Admission } from "../../gateway/proxy/admission.js";
import { InFlightLedger } from "../../gateway/proxy/in-flight-ledger.js";
import { SheddingPolicy } from "../../gateway/proxy/shedding-policy.js";

const CALLS = 1_000_000;
const ROUNDS = 7;
const overloaded = new Counter({
  name: "x_overloaded_total",
  help: "x",
  labelNames: ["upstream", "priority"],
  registers: [new Registry()],
});
const ledger = new InFlightLedger();
const admission = new Admission(
  "docs",
  ledger,
  0,
  { min_limit: 5, max_limit: 1000, mode: "enforce" },
  systemClock,
  overloaded,
);
const shedding = new SheddingPolicy({
  priorities: { gold: "critical", free: "sheddable" },
  shares: { sheddable: 0.5, default: 0.9, critical: 1 },
});
const plans = ["gold", "free", null, "pro"] as const;
const none: InFlightLedger | null = null as InFlightLedger | null;

function enabled(): number {
  let admitted = 0;
  for (let i = 0; i < CALLS; i++) {
    const a = admission;
    const priority = shedding.priorityOf(plans[i & 3]!);
    if (a.admit(priority, shedding.shares[priority]) !== "shed") {
      ledger.callAdmitted();
      a.sample(50 + (i & 7), 0);
      ledger.callEnded();
      admitted++;
    }
  }
  return admitted;
}

function absent(): number {
  let admitted = 0;
  for (let i = 0; i < CALLS; i++) {
    if (none !== null) none.callEnded();
    admitted += plans[i & 3] === null ? 0 : 1;
  }
  return admitted;
}

const perCall = (f: () => number): number => {
  const t0 = process.hrtime.bigint();
  f();
  return Number(process.hrtime.bigint() - t0) / CALLS;
};
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const on: number[] = [];
const off: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  on.push(perCall(enabled));
  off.push(perCall(absent));
}
process.stdout.write(
  `admission + sample + release: ${median(on).toFixed(1)} ns/call; without the blocks: ${median(off).toFixed(1)} ns/call\n`,
);
