/**
 * Time as Linux perf's Intel PT decoder keeps it (tools/perf/util/intel-pt-decoder,
 * perf 6.1), for `ptkit perf`'s perf script lines, which must print perf's times.
 * libipt's model ({@link TimeTracker}) differs in ways perf script shows:
 *
 * - CYC counts from a reference time (`cycRef`) that only moves at a TSC or MTC
 *   packet that comes right after a CYC packet, and at a CBR that changes the
 *   ratio: not at a PSB's TSC (which follows PSB), so after a gap between AUX buffers (perf decodes a queue's buffers as one
 *   trace) CYC times count from the last such packet before the gap.
 * - A time that would go backwards is ignored (CYC, MTC), so after such a gap time
 *   stands still at the PSB's TSC until the next MTC after a CYC.
 * - The cycles-to-TSC ratio: at an MTC after a CYC, perf looks ahead in the trace to
 *   the next MTC after a CYC (through MTCs not after a CYC, stopping at TSC, TMA,
 *   a CBR change, a time going backwards and the packets that stop or suspend
 *   tracing) and divides the TSC distance by the cycles counted on the way; without
 *   that, or when it is 1.25 times the nominal ratio / CBR or more, it is
 *   nominal ratio / CBR. CYC times are computed in doubles and truncated, as in C.
 * - CYC packets inside PSB+ count as elsewhere (perf since Linux 5.12).
 *
 * Times are kept as Numbers relative to a base taken at the first TSC (a multiple of
 * 2^32 just below it), so they stay exact for 2^53 ticks after it (weeks), whatever the
 * TSC's value. perf's CYC arithmetic is in doubles on the absolute time, so above 2^53
 * perf's CYC times round: {@link cyc} rounds the same way.
 */

import { doubleFields } from "../base/halves.js";
import type { Packet } from "../packet/types.js";
import * as packetTypes from "../packet/types.js";
import type { TimeConfig } from "./config.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { PacketType } = packetTypes;

const TWO_32 = 0x1_0000_0000;
/** TSC packets carry 56 bits. */
const TSC_WRAP = 2 ** 56;
/** perf's `tsc_slip`: a TSC this much behind the time is taken as having slipped past MTCs. */
const TSC_SLIP = 0x10000;
/** A look-ahead ratio this many times the CBR-based one is not believed. */
const MAX_RATIO_OVER_CBR = 1.25;

/** Packets after the current one, for the look-ahead: `next` returns the packet's size, or < 0 when there is none. */
export interface PacketSource {
  next(pkt: Packet): number;
}

/** (t / d) * n + ((t % d) * n) / d in integers, as perf's multdiv; 0 when d is 0. */
function multdiv(t: number, n: number, d: number): number {
  if (d === 0) return 0;
  return Math.floor(t / d) * n + Math.floor(((t % d) * n) / d);
}

export class PerfClock {
  private readonly mtcShift: number;
  /** CPUID 0x15 EBX/EAX (TSC:CTC), perf's tsc_ctc_ratio_n/d; d is 0 without n. */
  private readonly ratioN: number;
  private readonly ratioD: number;
  /** n / d when that divides evenly, else 0. */
  private readonly ratioMult: number;
  /** The nominal (maximum non-turbo) ratio, perf's max_non_turbo_ratio_fp. */
  private readonly nominal: number;

  /**
   * The absolute time is {@link base} + {@link time}. `base`: 0 until the first TSC,
   * then that TSC's upper 32 bits less one, times 2^32 (exact: a 32-bit number times a
   * power of 2); `baseHi` its upper half. `time` is never 0 once a TSC came (perf's
   * cyc_ref_timestamp test for "no reference" keeps its meaning).
   */
  private base = 0;
  private baseHi = 0;
  /** The current time, relative to {@link base}; 0 before the first TSC. */
  private time = 0;
  /**
   * Counts perf's restarts of its instructions-since-timestamp count (timestamp_insn_cnt,
   * which its sampling clock and its estimates add): TSC, MTC, and CYC packets that give
   * a time, whether or not the time moves.
   */
  updates = 0;
  private haveTsc = false;
  private tscTimestamp = 0;
  /** CTC-based time: the TSC the last TMA places, and the CTC ticks since. */
  private ctcTimestamp = 0;
  private ctcDelta = 0;
  private lastMtc = 0;
  private haveTma = false;
  private fixupLastMtc = false;
  /** What CYC counts from: the time at the last TSC/MTC after a CYC, and the cycles since. */
  private cycRef = 0;
  private cycleCnt = 0;
  private haveCalc = false;
  private calcCycToTsc = 0;
  private cbr = 0;
  private cbrCycToTsc = 0;

  /** Look-ahead scratch. */
  private readonly ahead: Packet;

  constructor(config: TimeConfig, scratch: Packet) {
    this.mtcShift = config.mtcFreq & 0xff;
    this.ratioN = config.cpuid15Ebx >>> 0;
    this.ratioD = this.ratioN === 0 ? 0 : config.cpuid15Eax >>> 0;
    this.ratioMult = this.ratioD !== 0 && this.ratioN % this.ratioD === 0 ? this.ratioN / this.ratioD : 0;
    this.nominal = config.nomFreq & 0xff;
    this.ahead = scratch;
    // Times past 2^31 and ratios: doubles from the start (the first TSC changed the
    // object's shape mid-decode, and the optimised code of cyc and tscHi was thrown away).
    doubleFields(this, [
      "base",
      "baseHi",
      "time",
      "tscTimestamp",
      "ctcTimestamp",
      "cycRef",
      "cycleCnt",
      "calcCycToTsc",
      "cbrCycToTsc",
    ]);
  }

  /** Forget everything (a new trace). */
  reset(): void {
    this.base = 0;
    this.baseHi = 0;
    this.time = 0;
    this.updates = 0;
    this.haveTsc = false;
    this.tscTimestamp = 0;
    this.ctcTimestamp = 0;
    this.ctcDelta = 0;
    this.lastMtc = 0;
    this.haveTma = false;
    this.fixupLastMtc = false;
    this.cycRef = 0;
    this.cycleCnt = 0;
    this.haveCalc = false;
    this.calcCycToTsc = 0;
    this.cbr = 0;
    this.cbrCycToTsc = 0;
  }

  copyFrom(o: PerfClock): void {
    this.base = o.base;
    this.baseHi = o.baseHi;
    this.time = o.time;
    this.updates = o.updates;
    this.haveTsc = o.haveTsc;
    this.tscTimestamp = o.tscTimestamp;
    this.ctcTimestamp = o.ctcTimestamp;
    this.ctcDelta = o.ctcDelta;
    this.lastMtc = o.lastMtc;
    this.haveTma = o.haveTma;
    this.fixupLastMtc = o.fixupLastMtc;
    this.cycRef = o.cycRef;
    this.cycleCnt = o.cycleCnt;
    this.haveCalc = o.haveCalc;
    this.calcCycToTsc = o.calcCycToTsc;
    this.cbr = o.cbr;
    this.cbrCycToTsc = o.cbrCycToTsc;
  }

  /** Whether a TSC was seen (before it there is no time). */
  get hasTime(): boolean {
    return this.haveTsc;
  }

  /** The current time as a Number: exact below 2^53 (tests, diagnostics); {@link tscHi}/{@link tscLo} are always exact. */
  get timestamp(): number {
    return this.base + this.time;
  }

  get tscHi(): number {
    return (this.baseHi + Math.floor(this.time / TWO_32)) >>> 0;
  }

  get tscLo(): number {
    return (this.time % TWO_32) >>> 0;
  }

  /** The cycles-to-TSC ratio CYC times use now (0: none; for tests and diagnostics). */
  get cycToTsc(): number {
    return this.haveCalc ? this.calcCycToTsc : this.cbr !== 0 ? this.cbrCycToTsc : 0;
  }

  /** TSC packet (value in hi/lo); `afterCyc`: the packet before it was a CYC. */
  tsc(pkt: Packet, afterCyc: boolean): void {
    this.haveTma = false;
    this.updates++;
    if (!this.haveTsc) {
      this.haveTsc = true;
      this.baseHi = pkt.hi > 0 ? pkt.hi - 1 : 0;
      this.base = this.baseHi * TWO_32;
      const t = (pkt.hi - this.baseHi) * TWO_32 + pkt.lo;
      this.tscTimestamp = t;
      this.time = t;
    } else {
      // The packet's 56 bits, with the current time's bits above them (the wraps of
      // 2^56 ticks since the base: none for centuries).
      const wraps = Math.floor(this.timestamp / TSC_WRAP) * TSC_WRAP;
      let t = (pkt.hi - this.baseHi) * TWO_32 + pkt.lo + wraps;
      this.tscTimestamp = t;
      if (t < this.time && this.time - t < TSC_SLIP) t = this.time;
      if (t < this.time) {
        t += TSC_WRAP;
        this.tscTimestamp = t;
      }
      this.time = t;
    }
    // perf computes no ratio from TSC packets (they may slip against CYC in PSB+).
    if (afterCyc) this.restartCyc();
  }

  /** TMA packet (CTC[15:0] in a, fast counter in b): where CTC time starts. */
  tma(pkt: Packet): void {
    if (this.ratioD === 0) return;
    const ctc = pkt.a & 0xffff;
    const rem = ctc & ((1 << this.mtcShift) - 1);
    this.lastMtc = (ctc >>> this.mtcShift) & 0xff;
    this.ctcTimestamp = this.tscTimestamp - (pkt.b & 0x1ff) - this.ctcToTsc(rem);
    this.ctcDelta = 0;
    this.haveTma = true;
    this.fixupLastMtc = true;
  }

  /**
   * MTC packet (CTC[MTCFreq+7:MTCFreq] in a); `afterCyc`: the packet before it was a
   * CYC; `ahead`: the packets after it in the same AUX buffer, for the ratio.
   */
  mtc(pkt: Packet, afterCyc: boolean, ahead: PacketSource | undefined): void {
    if (!this.haveTma) return;
    this.updates++;
    const mtc = pkt.a & 0xff;
    if (this.mtcShift > 8 && this.fixupLastMtc) {
      this.fixupLastMtc = false;
      this.lastMtc = fixupLastMtc(mtc, this.mtcShift, this.lastMtc);
    }
    this.ctcDelta += mtcDelta(mtc, this.lastMtc) << this.mtcShift;
    const t = this.ctcTimestamp + this.ctcToTsc(this.ctcDelta);
    if (t >= this.time) this.time = t;
    this.lastMtc = mtc;
    if (afterCyc) {
      this.restartCyc();
      if (ahead) this.lookAhead(ahead);
    }
  }

  /** CBR packet (ratio in a): when the ratio changed, the CBR-based ratio, and CYC counts from now. */
  cbrPacket(pkt: Packet): void {
    const cbr = pkt.a & 0xff;
    if (cbr === this.cbr) return;
    this.cbr = cbr;
    this.cbrCycToTsc = this.nominal / cbr;
    // CYC counts from here at the new frequency (a fix perf 6.1's stable releases have).
    this.cycRef = this.time;
    this.cycleCnt = 0;
  }

  /** CYC packet (cycles in hi/lo), in PSB+ or not. */
  cyc(pkt: Packet): void {
    this.cycleCnt += pkt.hi * TWO_32 + pkt.lo;
    if (this.cycRef === 0) return;
    let ratio: number;
    if (this.haveCalc) ratio = this.calcCycToTsc;
    else if (this.cbr !== 0) ratio = this.cbrCycToTsc;
    else return;
    this.updates++;
    // C: uint64 + uint64 * double, in doubles on the absolute time, truncated back
    // to uint64. base + cycRef rounds as C's conversion of the absolute uint64 does;
    // the result, an integer within 2^53 of base, comes back exactly.
    const t = Math.trunc(this.base + this.cycRef + this.cycleCnt * ratio) - this.base;
    if (t >= this.time) this.time = t;
  }

  private restartCyc(): void {
    this.cycRef = this.time;
    this.cycleCnt = 0;
    this.haveCalc = false;
  }

  private ctcToTsc(ctc: number): number {
    return this.ratioMult !== 0 ? ctc * this.ratioMult : multdiv(ctc, this.ratioN, this.ratioD);
  }

  /**
   * perf's intel_pt_calc_cyc_to_tsc from an MTC: the ratio over the cycles to the next
   * MTC that follows a CYC, if the look-ahead gets there.
   */
  private lookAhead(src: PacketSource): void {
    const pkt = this.ahead;
    let cycles = 0;
    let cbr = 0;
    let cbrRatio = 0;
    let lastMtc = this.lastMtc;
    let ctcDelta = this.ctcDelta;
    let timestamp = this.time;
    let fixup = this.fixupLastMtc;
    // perf starts with the type of the packet before the MTC (a CYC).
    let prevCyc = true;
    let t = 0;
    for (;;) {
      if (src.next(pkt) < 0) return;
      const type = pkt.type;
      if (type === PacketType.Pad) continue;
      switch (type) {
        case PacketType.Tnt8:
        case PacketType.Tnt64:
        case PacketType.TipPge:
        case PacketType.Tip:
        case PacketType.Fup:
        case PacketType.Psb:
        case PacketType.Pip:
        case PacketType.ModeExec:
        case PacketType.ModeTsx:
        case PacketType.PsbEnd:
        case PacketType.Vmcs:
        case PacketType.Mnt:
        case PacketType.Ptw:
        case PacketType.Bbp:
        case PacketType.Bip:
        case PacketType.Bep:
          prevCyc = false;
          continue;
        case PacketType.Mtc: {
          const mtc = pkt.a & 0xff;
          if (this.mtcShift > 8 && fixup) {
            fixup = false;
            lastMtc = fixupLastMtc(mtc, this.mtcShift, lastMtc);
          }
          ctcDelta += mtcDelta(mtc, lastMtc) << this.mtcShift;
          lastMtc = mtc;
          t = this.ctcTimestamp + this.ctcToTsc(ctcDelta);
          if (t < timestamp) return;
          if (!prevCyc) {
            timestamp = t;
            continue;
          }
          break;
        }
        case PacketType.Cyc:
          cycles += pkt.hi * TWO_32 + pkt.lo;
          prevCyc = true;
          continue;
        case PacketType.Cbr: {
          const ratio = pkt.a & 0xff;
          if (cbr !== 0 && cbr !== ratio) return;
          cbr = ratio;
          cbrRatio = this.nominal / ratio;
          prevCyc = false;
          continue;
        }
        default:
          // TSC and TMA (perf does not use them here), and packets that stop or
          // suspend tracing or time.
          return;
      }
      break;
    }
    if (cbr === 0 && this.cbr !== 0) {
      cbr = this.cbr;
      cbrRatio = this.cbrCycToTsc;
    }
    if (cycles === 0) return;
    const ratio = (t - this.time) / cycles;
    if (cbr !== 0 && ratio > cbrRatio && ratio / cbrRatio > MAX_RATIO_OVER_CBR) return;
    this.calcCycToTsc = ratio;
    this.haveCalc = true;
  }
}

/** MTC ticks from `last` to `mtc` (8 bits; the same value is a whole wrap, 256). */
function mtcDelta(mtc: number, last: number): number {
  return mtc > last ? mtc - last : mtc + 256 - last;
}

/**
 * A TMA's CTC lacks the MTC bits above bit 15 when MTCFreq > 8: take them from the
 * first MTC after it, one wrap back when that would not be ahead (perf's
 * intel_pt_fixup_last_mtc).
 */
function fixupLastMtc(mtc: number, shift: number, last: number): number {
  const firstMissing = (1 << (16 - shift)) >>> 0;
  const mask = ~(firstMissing - 1) >>> 0;
  let fixed = (last | (mtc & mask)) >>> 0;
  if (fixed >= mtc) fixed = ((fixed - firstMissing) >>> 0) & 0xff;
  return fixed;
}
