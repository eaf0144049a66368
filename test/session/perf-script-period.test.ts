/**
 * InsnPeriod, perf script's instruction sampling by time (--itrace=i<time>), rule by
 * rule, on a period of 16 ticks. The clock is perf's decoder's: the last timestamp
 * plus one tick per instruction since perf last restarted that count, which it does
 * at every TSC, MTC and timed CYC, whether or not the time moved (the `seq` argument,
 * PtEvent.timingSeq). Expected samples are worked by hand from those rules.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InsnPeriod } from "../../src/session/perf-script-period.js";

/** Which of `n` instructions (none a branch) at time `lo` and sequence `seq` are samples. */
function samples(p: InsnPeriod, n: number, lo: number, seq?: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i++) if (p.take(0, lo, false, seq)) out.push(i);
  return out;
}

describe("InsnPeriod by time", () => {
  it("samples where the clock (time + instructions) enters a new period", () => {
    const p = new InsnPeriod(0, 16);
    // Time 100: the first walk notes the period the next tick is in (101: 96) and goes
    // 16 - (101 - 96) = 11 instructions: the 11th (index 10) is the sample; the clock
    // (111) is not past 96's period, so the next one is 112's; then 16 more.
    assert.deepEqual(samples(p, 30, 100, 1), [10, 26]);
  });

  it("restarts its count where the timing sequence moves, even when the time does not", () => {
    const a = new InsnPeriod(0, 16);
    const b = new InsnPeriod(0, 16);
    assert.deepEqual(samples(a, 10, 100, 1), []);
    assert.deepEqual(samples(b, 10, 100, 1), []);
    // a: a timing packet that did not move the time (seq 2): a new walk from clock 100,
    // 16 - (100 - 96) = 12 instructions to go. b: none (seq 1): the walk of 11 goes on.
    assert.deepEqual(samples(a, 13, 100, 2), [11]);
    assert.deepEqual(samples(b, 13, 100, 1), [0]);
  });

  it("without a sequence, restarts only where the time moves", () => {
    const p = new InsnPeriod(0, 16);
    assert.deepEqual(samples(p, 10, 100), []);
    assert.deepEqual(samples(p, 13, 100), [0]);
  });
});
