/**
 * Estimation of the fast-counter:cycles ratio (fcr) that CYC packets need, with
 * libipt's `pt_tcal` semantics. fcr is fixed point with {@link FCR_SHIFT} fraction
 * bits: fast-counter ticks = (cycles * fcr) >> FCR_SHIFT.
 *
 * Sources, best first: cycles counted between two MTCs; cycles between two TSCs in
 * PSB+ (only while no MTC was seen); the nominal frequency divided by the CBR ratio.
 */
import * as errors from "../base/errors.js";
import * as u64 from "../base/u64.js";
import { U64, type U64Like } from "../base/u64.js";
import type { Packet } from "../packet/types.js";
import { type TimeConfig, TimeParams } from "./config.js";
import * as ctc from "./ctc.js";
import * as fcr from "./fcr.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { ErrorCode } = errors;
const { ctcDelta, ctcToFc } = ctc;
const { FCR_SHIFT } = fcr;
const { add64, div64, lt64, mul64, shl64, shr64, sub64 } = u64;

/** Values with these bits set would overflow when shifted left by FCR_SHIFT. */
const HI_OVERFLOW_MASK = ~(0xffffffff >>> FCR_SHIFT);
/** TSC packets carry 56 bits; a second TSC below the first wrapped this much. */
const TSC_WRAP_HI = 0x0100_0000;
/** SKL168 tolerance: the cycles of a CYC-counter wrap (4096) minus some variation. */
const SKL168_SLACK_CYCLES = 0xf00;
/** SKL168 detection needs MTC periods short compared with a CYC-counter wrap. */
const SKL168_MAX_MTC_FREQ = 10;

export class TimeCalibrator {
  private readonly params: TimeParams;

  private readonly fcr = new U64();
  private readonly minFcr = new U64();
  private readonly maxFcr = new U64();
  /** The last TSC, for calibrating at the next TSC in PSB+. */
  private readonly tsc = new U64();
  private readonly cycTsc = new U64();
  private readonly cycMtc = new U64();
  /** The CTC of the last MTC. */
  private ctc = 0;
  private lostMtc = 0;
  private haveMtc = false;
  private checkSkl168 = false;

  private readonly cyc = new U64();
  private readonly fc = new U64();
  private readonly next = new U64();
  private readonly tmp = new U64();

  constructor(config: TimeConfig) {
    this.params = new TimeParams(config);
    this.reset();
  }

  /** Forget everything, calibration included (libipt `pt_tcal_init`). */
  reset(): void {
    this.fcr.set(0, 0);
    this.minFcr.set(0xffffffff, 0xffffffff);
    this.maxFcr.set(0, 0);
    this.tsc.set(0, 0);
    this.cycTsc.set(0, 0);
    this.cycMtc.set(0, 0);
    this.ctc = 0;
    this.lostMtc = 0;
    this.haveMtc = false;
    this.checkSkl168 = false;
  }

  /** Copy another calibrator's state (its configuration is not copied). */
  copyFrom(other: TimeCalibrator): void {
    this.fcr.copy(other.fcr);
    this.minFcr.copy(other.minFcr);
    this.maxFcr.copy(other.maxFcr);
    this.tsc.copy(other.tsc);
    this.cycTsc.copy(other.cycTsc);
    this.cycMtc.copy(other.cycMtc);
    this.ctc = other.ctc;
    this.lostMtc = other.lostMtc;
    this.haveMtc = other.haveMtc;
    this.checkSkl168 = other.checkSkl168;
  }

  /** Whether an fcr was ever set since the last reset (a set fcr may be 0). */
  get hasFcr(): boolean {
    return !lt64(this.maxFcr.hi, this.maxFcr.lo, this.minFcr.hi, this.minFcr.lo);
  }

  /** MTC calibrations attempted and skipped (errors, SKL168) since the last success. */
  get lostMtcCount(): number {
    return this.lostMtc;
  }

  /** Copy the fcr into `out` and return 0, or return -NoTime (out untouched). */
  queryFcr(out: U64): number {
    if (!this.hasFcr) return -ErrorCode.NoTime;
    out.copy(this.fcr);
    return 0;
  }

  /** Supply an fcr (already shifted by FCR_SHIFT), e.g. an initial guess. */
  setFcr(fcr: Readonly<U64Like>): number {
    this.assignFcr(fcr.hi, fcr.lo);
    return 0;
  }

  /** PSB: arm the SKL168 check for the next MTC when the CPU has the erratum. */
  updatePsb(): number {
    if (this.params.skl168) this.checkSkl168 = true;
    return 0;
  }

  /** TSC outside PSB+: may follow lost time, so it only restarts the TSC interval. */
  updateTsc(packet: Packet): number {
    this.tsc.set(packet.hi, packet.lo);
    this.cycTsc.set(0, 0);
    return 0;
  }

  /**
   * TSC inside PSB+: calibrate from the cycles counted since the previous TSC, unless
   * there was no previous TSC or no cycles, or MTCs are available (they are preferred).
   * A TSC behind the previous one by more than one 56-bit wrap is -BadPacket.
   */
  headerTsc(packet: Packet): number {
    const lastHi = this.tsc.hi;
    const lastLo = this.tsc.lo;
    const cyc = this.cyc.copy(this.cycTsc);
    this.tsc.set(packet.hi, packet.lo);
    this.cycTsc.set(0, 0);

    if ((lastHi === 0 && lastLo === 0) || cyc.isZero()) return 0;
    if (this.haveMtc) return 0;

    const delta = this.tmp.set(packet.hi, packet.lo);
    if (lt64(delta.hi, delta.lo, lastHi, lastLo)) {
      delta.hi = (delta.hi + TSC_WRAP_HI) >>> 0;
      if (lt64(delta.hi, delta.lo, lastHi, lastLo)) return -ErrorCode.BadPacket;
    }
    sub64(delta, delta.hi, delta.lo, lastHi, lastLo);
    if ((delta.hi & HI_OVERFLOW_MASK) !== 0) return -ErrorCode.Internal;

    shl64(delta, delta.hi, delta.lo, FCR_SHIFT);
    div64(delta, delta.hi, delta.lo, cyc.hi, cyc.lo);
    this.assignFcr(delta.hi, delta.lo);
    return 0;
  }

  /** CBR outside PSB+: the frequency changed, so start over, then calibrate from it. */
  updateCbr(packet: Packet): number {
    this.reset();
    return this.headerCbr(packet);
  }

  /**
   * CBR inside PSB+: fcr = nominal ratio / CBR ratio, when the nominal ratio is known
   * (otherwise nothing happens). A zero CBR ratio is -BadPacket.
   */
  headerCbr(packet: Packet): number {
    const nominal = this.params.nomFreq;
    if (nominal === 0) return 0;
    const ratio = packet.a & 0xff;
    if (ratio === 0) return -ErrorCode.BadPacket;
    this.assignFcr(0, Math.floor((nominal << FCR_SHIFT) / ratio));
    return 0;
  }

  /** TMA: no effect on calibration. */
  updateTma(_packet: Packet): number {
    return 0;
  }

  /**
   * MTC: calibrate from the cycles counted since the previous MTC. Needs two MTCs; an
   * MTC without cycles in between is skipped and the interval extends to the next
   * one. The interval restarts before any error: -BadPacket for a CTC going back
   * by more than one wrap, -BadConfig for missing CPUID 0x15, -Internal when the
   * interval is too long to shift. A skipped or failed attempt counts as a lost MTC.
   */
  updateMtc(packet: Packet): number {
    const mtcFreq = this.params.mtcFreq;
    const last = this.ctc;
    const cyc = this.cyc.copy(this.cycMtc);
    const checkSkl168 = this.checkSkl168;
    const ctc = ((packet.a & 0xff) << mtcFreq) >>> 0;

    this.checkSkl168 = false;

    if (!this.haveMtc) {
      this.cycMtc.set(0, 0);
      this.ctc = ctc;
      this.haveMtc = true;
      return 0;
    }
    if (cyc.isZero()) return 0;

    this.cycMtc.set(0, 0);
    this.ctc = ctc;
    this.lostMtc = (this.lostMtc + 1) >>> 0;

    const delta = ctcDelta(ctc, last, mtcFreq);
    if (delta < 0) return delta;
    const fc = this.fc;
    const err = ctcToFc(fc, delta, this.params);
    if (err < 0) return err;
    if ((fc.hi & HI_OVERFLOW_MASK) !== 0) return -ErrorCode.Internal;

    const fcr = this.next;
    shl64(fcr, fc.hi, fc.lo, FCR_SHIFT);
    div64(fcr, fcr.hi, fcr.lo, cyc.hi, cyc.lo);

    if (checkSkl168 && this.looksLikeSkl168(delta, cyc, fc)) return 0;

    this.assignFcr(fcr.hi, fcr.lo);
    this.lostMtc = 0;
    return 0;
  }

  /** CYC: count cycles towards both calibration intervals. */
  updateCyc(packet: Packet): number {
    add64(this.cycMtc, this.cycMtc.hi, this.cycMtc.lo, packet.hi, packet.lo);
    add64(this.cycTsc, this.cycTsc.hi, this.cycTsc.lo, packet.hi, packet.lo);
    return 0;
  }

  /**
   * OVF when calibration should survive it (ptdump --keep-tcal-on-ovf): restart the
   * TSC and MTC intervals but keep fcr. Otherwise callers use {@link reset}.
   */
  updateOvf(): number {
    this.tsc.set(0, 0);
    this.cycTsc.set(0, 0);
    this.cycMtc.set(0, 0);
    this.ctc = 0;
    this.haveMtc = false;
    return 0;
  }

  /**
   * SKL168 (CYC, and possibly MTC, dropped right before PSB) for the first MTC after a
   * PSB: the interval spans more than one MTC period, or, for short MTC periods and
   * with a previous fcr to compare, the cycles fall short of the measured fast-counter
   * ticks by at least one CYC-counter wrap.
   */
  private looksLikeSkl168(delta: number, cyc: U64, fc: U64): boolean {
    const mtcFreq = this.params.mtcFreq;
    if ((1 << mtcFreq) >>> 0 < delta) return true;
    if (mtcFreq >= SKL168_MAX_MTC_FREQ || !this.hasFcr) return false;
    const expected = this.tmp;
    add64(expected, cyc.hi, cyc.lo, 0, SKL168_SLACK_CYCLES);
    mul64(expected, this.fcr.hi, this.fcr.lo, expected.hi, expected.lo);
    shr64(expected, expected.hi, expected.lo, FCR_SHIFT);
    return lt64(expected.hi, expected.lo, fc.hi, fc.lo);
  }

  private assignFcr(hi: number, lo: number): void {
    this.fcr.set(hi, lo);
    const min = this.minFcr;
    const max = this.maxFcr;
    const below = lt64(hi, lo, min.hi, min.lo);
    const above = lt64(max.hi, max.lo, hi, lo);
    // Both set each time (to what they were, mostly): a new maximum's set, run for the
    // first time once V8 had optimised updateMtc, threw the optimised code away.
    min.set(below ? hi : min.hi, below ? lo : min.lo);
    max.set(above ? hi : max.hi, above ? lo : max.lo);
  }
}
