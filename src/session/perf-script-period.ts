/**
 * When perf script takes an instruction sample (--itrace=i<period>), per stream, as
 * perf 6.1's Intel PT decoder decides (intel-pt-decoder.c, facts only):
 *
 * - In instructions (i100i): every `period`-th instruction of the stream.
 * - In time (i100us, i1ms, i100t, a bare i: 100us): the period in TSC ticks (ns by
 *   perf's TIME_CONV: intel_pt_ns_to_ticks) rounded down to a power of two P. The
 *   decoder's clock is the last timestamp (TSC, MTC, CYC) plus one tick per
 *   instruction since it; an instruction is sampled when that clock enters a new
 *   period (clock & ~(P-1) beyond the last sampled one). The decoder walks from branch
 *   to branch and decides at the start of each walk how many instructions to go: when
 *   the clock already passed a boundary, the walk's first instruction is the sample.
 *   After tracing stops (or the decoder resynchronises), the first walk only notes
 *   the period it is in (no sample) and sampling goes on from the next boundary.
 *
 * Instruction samples carry perf's period field: the instructions since the stream's
 * last sample. No BigInt: the clock is kept as 32-bit halves.
 */

/** Every instruction of one stream passes here; `take` says whether it is a sample. */
export class InsnPeriod {
  /** Instructions since the last sample (perf's period field of the sample). */
  sinceSample = 0;
  // Instruction periods.
  private readonly every: number;
  private count = 0;
  // Time periods: P = 2^shift ticks; the clock is tsHi:tsLo + cnt.
  private readonly ticks: boolean;
  private readonly shift: number;
  private readonly maskHi: number;
  private readonly maskLo: number;
  private tsHi = -1;
  private tsLo = -1;
  private tsSeq = -1;
  private cnt = 0;
  private lastHi = 0;
  private lastLo = 0;
  private continuous = false;
  /** Instructions left in the current walk before its sample (0: a new walk starts). */
  private remaining = 0;

  /** `insns`: every `insns`-th instruction; else every `ticks` (> 0) TSC ticks. */
  constructor(insns: number, ticks: number) {
    this.ticks = insns === 0;
    this.every = insns;
    // perf's intel_pt_lower_power_of_2; a period beyond 2^52 ticks (weeks) is taken as 2^52.
    let shift = 0;
    while (shift < 52 && 2 ** (shift + 1) <= ticks) shift++;
    this.shift = shift;
    this.maskHi = shift >= 32 ? ~((2 ** (shift - 32) - 1) | 0) : -1;
    this.maskLo = shift >= 32 ? 0 : ~((2 ** shift - 1) | 0);
  }

  /** Tracing stopped, or the decoder lost sync: perf's continuous_period ends. */
  stop(): void {
    this.continuous = false;
    this.remaining = 0;
  }

  /**
   * One instruction at TSC hi:lo (perf's decoder time, the last timestamp); `branch`:
   * it is a branch (the decoder's walk ends after it); `seq`: changes where perf's
   * decoder restarts its count of instructions since the timestamp (a timing packet,
   * whether or not the time moved: PtEvent.timingSeq), if known. True: it is a sample.
   */
  take(hi: number, lo: number, branch: boolean, seq = -1): boolean {
    this.sinceSample++;
    if (!this.ticks) {
      if (++this.count < this.every) return false;
      this.count = 0;
      return true;
    }
    if (hi !== this.tsHi || lo !== this.tsLo || seq !== this.tsSeq) {
      // A new timestamp: perf's timestamp_insn_cnt starts again (between walks).
      this.tsHi = hi;
      this.tsLo = lo;
      this.tsSeq = seq;
      this.cnt = 0;
      this.remaining = 0;
    }
    if (this.remaining === 0) this.remaining = this.nextPeriod();
    this.cnt++;
    const sample = --this.remaining === 0;
    if (sample) {
      // perf's intel_pt_sample_insn: the period the clock is in now, or the next one.
      this.clock();
      if (this.gt(this.mHi, this.mLo, this.lastHi, this.lastLo)) {
        this.lastHi = this.mHi;
        this.lastLo = this.mLo;
      } else this.addPeriod();
    }
    if (branch) this.remaining = 0;
    return sample;
  }

  /**
   * A FUP at the IP the last walk ended at (an interrupt, tracing stopped there): perf
   * walks there all the same, no instruction far, and works out that walk's period
   * (which, after tracing started, notes the period it is in).
   */
  emptyWalk(hi: number, lo: number, seq = -1): void {
    if (!this.ticks || this.remaining !== 0) return;
    if (hi !== this.tsHi || lo !== this.tsLo || seq !== this.tsSeq) {
      this.tsHi = hi;
      this.tsLo = lo;
      this.tsSeq = seq;
      this.cnt = 0;
    }
    this.nextPeriod();
  }

  /** Take the period field of a sample just taken. */
  period(): number {
    const n = this.sinceSample;
    this.sinceSample = 0;
    return n;
  }

  // The clock (tsHi:tsLo + cnt + extra) and its period start, in tHi:tLo and mHi:mLo.
  private tHi = 0;
  private tLo = 0;
  private mHi = 0;
  private mLo = 0;
  private clock(extra = 0): void {
    const lo = this.tsLo + this.cnt + extra;
    this.tLo = lo >>> 0;
    this.tHi = (this.tsHi + Math.floor(lo / 0x100000000)) >>> 0;
    this.mHi = (this.tHi & this.maskHi) >>> 0;
    this.mLo = (this.tLo & this.maskLo) >>> 0;
  }

  private gt(aHi: number, aLo: number, bHi: number, bLo: number): boolean {
    return aHi > bHi || (aHi === bHi && aLo > bLo);
  }

  private addPeriod(): void {
    const p = 2 ** this.shift;
    const lo = this.lastLo + (p % 0x100000000);
    this.lastLo = lo >>> 0;
    this.lastHi = (this.lastHi + Math.floor(p / 0x100000000) + Math.floor(lo / 0x100000000)) >>> 0;
  }

  /** perf's intel_pt_next_period: how many instructions this walk goes before its sample. */
  private nextPeriod(): number {
    const p = 2 ** this.shift;
    this.clock();
    if (this.continuous) {
      if (this.gt(this.mHi, this.mLo, this.lastHi, this.lastLo)) return 1;
    } else {
      this.clock(1);
      if (this.gt(this.mHi, this.mLo, this.lastHi, this.lastLo)) {
        this.lastHi = this.mHi;
        this.lastLo = this.mLo;
        this.continuous = true;
      }
    }
    if (this.gt(this.lastHi, this.lastLo, this.mHi, this.mLo)) return p;
    // The clock's offset into its period.
    const into = (this.tHi - this.mHi) * 0x100000000 + (this.tLo - this.mLo);
    return p - into;
  }
}
