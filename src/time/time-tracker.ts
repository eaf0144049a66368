/**
 * TSC estimation from timing packets, with libipt's `pt_time` semantics: the same
 * results, the same state after errors and the same error codes.
 *
 * The estimate is `base + fc`: `base` is the TSC at the last TSC or MTC (minus the
 * TMA fast counter), `fc` the fast-counter ticks since, accumulated from TMA and CYC.
 * All 64-bit state is kept as exact 32-bit halves and wraps modulo 2^64 as in C.
 */
import * as errors from "../base/errors.js";
import { toBigInt } from "../base/halves.js";
import * as u64 from "../base/u64.js";
import { U64, type U64Like } from "../base/u64.js";
import type { Packet } from "../packet/types.js";
import { type TimeConfig, TimeParams } from "./config.js";
import * as ctc from "./ctc.js";
import * as fcr from "./fcr.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { ErrorCode } = errors;
const { ctcDelta, ctcToFc, MTC_CTC_BITS, TMA_CTC_BITS, TMA_CTC_MASK } = ctc;
const { FCR_SHIFT } = fcr;
const { add64, div64, lt64, mul64, shl64, shr64, sub64 } = u64;

/** The answer to {@link TimeTracker.queryTsc}; reuse one instance. */
export class TscQuery {
  tscHi = 0;
  tscLo = 0;
  /** MTC packets that could not be applied since the last TSC. */
  lostMtc = 0;
  /** CYC packets that could not be applied (no calibration) since the last TSC or MTC. */
  lostCyc = 0;

  /** The estimated TSC (API edge only). */
  get tscBig(): bigint {
    return toBigInt(this.tscHi, this.tscLo);
  }
}

export class TimeTracker {
  private readonly params: TimeParams;

  private readonly tsc = new U64();
  private readonly base = new U64();
  /** Fast-counter ticks since `base`. */
  private readonly fc = new U64();
  /** The last CTC (from MTC or TMA). */
  private ctc = 0;
  /** The CTC when `fc` was last cleared. */
  private ctcCyc = 0;
  private lostMtc = 0;
  private lostCyc = 0;
  private cbr = 0;
  private haveTsc = false;
  private haveCbr = false;
  private haveTma = false;
  private haveMtc = false;

  private readonly cyc = new U64();
  private readonly tmp = new U64();

  constructor(config: TimeConfig) {
    this.params = new TimeParams(config);
  }

  /** Forget everything (libipt `pt_time_init`). */
  reset(): void {
    this.tsc.set(0, 0);
    this.base.set(0, 0);
    this.fc.set(0, 0);
    this.ctc = 0;
    this.ctcCyc = 0;
    this.lostMtc = 0;
    this.lostCyc = 0;
    this.cbr = 0;
    this.haveTsc = false;
    this.haveCbr = false;
    this.haveTma = false;
    this.haveMtc = false;
  }

  /** Copy another tracker's state (its configuration is not copied). */
  copyFrom(other: TimeTracker): void {
    this.tsc.copy(other.tsc);
    this.base.copy(other.base);
    this.fc.copy(other.fc);
    this.ctc = other.ctc;
    this.ctcCyc = other.ctcCyc;
    this.lostMtc = other.lostMtc;
    this.lostCyc = other.lostCyc;
    this.cbr = other.cbr;
    this.haveTsc = other.haveTsc;
    this.haveCbr = other.haveCbr;
    this.haveTma = other.haveTma;
    this.haveMtc = other.haveMtc;
  }

  /**
   * Fill `out` with the estimate and loss counts. They are filled even when -NoTime is
   * returned (no TSC seen yet): MTC and CYC still advance the estimate from 0, which
   * ptdump --no-wall-clock prints.
   */
  queryTsc(out: TscQuery): number {
    out.tscHi = this.tsc.hi;
    out.tscLo = this.tsc.lo;
    out.lostMtc = this.lostMtc;
    out.lostCyc = this.lostCyc;
    return this.haveTsc ? 0 : -ErrorCode.NoTime;
  }

  /** The core:bus ratio (always > 0), or -NoCbr before the first valid CBR. */
  queryCbr(): number {
    return this.haveCbr ? this.cbr : -ErrorCode.NoCbr;
  }

  /** TSC packet (value in lo/hi): the full time; clears losses. */
  updateTsc(packet: Packet): number {
    this.haveTsc = true;
    this.haveTma = false;
    this.haveMtc = false;
    this.tsc.set(packet.hi, packet.lo);
    this.base.set(packet.hi, packet.lo);
    this.ctc = 0;
    this.fc.set(0, 0);
    this.lostMtc = 0;
    this.lostCyc = 0;
    return 0;
  }

  /** CBR packet (ratio in a). A zero ratio is -BadPacket and changes nothing. */
  updateCbr(packet: Packet): number {
    const ratio = packet.a & 0xff;
    if (ratio === 0) return -ErrorCode.BadPacket;
    this.haveCbr = true;
    this.cbr = ratio;
    return 0;
  }

  /**
   * TMA packet (CTC[15:0] in a, fast counter in b): places the preceding TSC within
   * the CTC period. Only one TMA per TSC: -BadContext without a TSC or on a second TMA.
   */
  updateTma(packet: Packet): number {
    if (!this.haveTsc || this.haveTma) return -ErrorCode.BadContext;
    // MTCs between TSC and TMA are ignored, so haveMtc cannot be set here.
    if (this.haveMtc) return -ErrorCode.Internal;

    const ctc = packet.a & 0xffff;
    const fc = packet.b & 0xffff;
    const mtcHi = this.params.mtcFreq + MTC_CTC_BITS;
    const ctcMask = ((1 << mtcHi) - 1) >>> 0;

    this.haveTma = true;
    sub64(this.base, this.base.hi, this.base.lo, 0, fc);
    add64(this.fc, this.fc.hi, this.fc.lo, 0, fc);

    // When TMA carries every CTC bit MTC does, it serves as the first MTC. Otherwise the
    // next MTC supplies the missing high bits (see updateMtc).
    if (mtcHi <= TMA_CTC_BITS) this.haveMtc = true;
    this.ctc = this.ctcCyc = (ctc & ctcMask) >>> 0;
    return 0;
  }

  /**
   * MTC packet (CTC[MTCFreq+7:MTCFreq] in a): advances `base` by the CTC distance.
   * Ignored between a TSC and its TMA. State is advanced before any error, so the next
   * MTC measures from this one; a CTC going backwards by more than one wrap counts a
   * lost MTC and returns -BadPacket; missing CPUID 0x15 returns -BadConfig.
   */
  updateMtc(packet: Packet): number {
    if (this.haveTsc && !this.haveTma) return 0;

    const mtcFreq = this.params.mtcFreq;
    const ctc = ((packet.a & 0xff) << mtcFreq) >>> 0;
    const hadMtc = this.haveMtc;
    let last = this.ctc;

    // Remember where fc restarts from, unless fc is still counting from there.
    if (!this.fc.isZero() || this.lostCyc !== 0 || !hadMtc) this.ctcCyc = ctc;

    this.haveMtc = true;
    this.fc.set(0, 0);
    this.ctc = ctc;
    this.lostCyc = 0;

    if (!hadMtc) {
      // Without TMA we cannot tell where in its period this first MTC started; skip it.
      if (!this.haveTma) return 0;
      // Only a TMA that lacked MTC's high bits leaves haveMtc clear.
      if (last >>> TMA_CTC_BITS !== 0) return -ErrorCode.Internal;

      // Take the high bits from this MTC, one TMA period back if its low bits are
      // behind the TMA's (assumes no MTC was lost around the TMA).
      let high = (ctc & ~TMA_CTC_MASK) >>> 0;
      if ((ctc & TMA_CTC_MASK) < last) {
        high = (high - (1 << TMA_CTC_BITS)) >>> 0;
        high = (high & (0xff << mtcFreq)) >>> 0;
      }
      last = (last | high) >>> 0;
    }

    const delta = ctcDelta(ctc, last, mtcFreq);
    if (delta < 0) {
      this.lostMtc = (this.lostMtc + 1) >>> 0;
      return delta;
    }
    const tmp = this.tmp;
    const err = ctcToFc(tmp, delta, this.params);
    if (err < 0) return err;

    add64(this.base, this.base.hi, this.base.lo, tmp.hi, tmp.lo);
    this.tsc.copy(this.base);
    return 0;
  }

  /**
   * CYC packet (cycles in lo/hi): adds cycles * fcr / 256 fast-counter ticks. `fcr` is
   * the calibrator's ratio, or zero when there is none: the CYC is then counted as
   * lost (returns 0). -BadPacket/-BadConfig come from spreading the first CYC after
   * an MTC over earlier MTC periods.
   */
  updateCyc(packet: Packet, fcr: Readonly<U64Like>): number {
    if (fcr.hi === 0 && fcr.lo === 0) {
      this.lostCyc = (this.lostCyc + 1) >>> 0;
      return 0;
    }
    const cyc = this.cyc.set(packet.hi, packet.lo);
    if (this.fc.isZero()) {
      const err = this.dropEarlierPeriods(cyc, fcr);
      if (err < 0) return err;
    }
    const tmp = this.tmp;
    mul64(tmp, cyc.hi, cyc.lo, fcr.hi, fcr.lo);
    shr64(tmp, tmp.hi, tmp.lo, FCR_SHIFT);
    add64(this.fc, this.fc.hi, this.fc.lo, tmp.hi, tmp.lo);
    add64(this.tsc, this.base.hi, this.base.lo, this.fc.hi, this.fc.lo);
    return 0;
  }

  /**
   * A CYC whose count began before the last MTC(s) also covers those MTC periods, which
   * `base` already includes: subtract their expected cycles (CTC distance in fc ticks,
   * converted with fcr), clamping at zero.
   */
  private dropEarlierPeriods(cyc: U64, fcr: Readonly<U64Like>): number {
    if (this.ctc === this.ctcCyc) return 0;
    const delta = ctcDelta(this.ctc, this.ctcCyc, this.params.mtcFreq);
    if (delta < 0) return delta;
    const old = this.tmp;
    const err = ctcToFc(old, delta, this.params);
    if (err < 0) return err;
    shl64(old, old.hi, old.lo, FCR_SHIFT);
    div64(old, old.hi, old.lo, fcr.hi, fcr.lo);
    if (lt64(cyc.hi, cyc.lo, old.hi, old.lo)) cyc.set(0, 0);
    else sub64(cyc, cyc.hi, cyc.lo, old.hi, old.lo);
    return 0;
  }
}
