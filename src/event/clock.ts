/**
 * The event decoder's sense of time: a {@link TimeTracker} (TSC estimate) and a
 * {@link TimeCalibrator} (CYC calibration) updated together from timing packets, the
 * way libipt's event decoder feeds `pt_time` and `pt_tcal`; or, with
 * {@link ClockConfig.perfClock}, Linux perf's decoder's time ({@link PerfClock}).
 *
 * Configuration errors (-BadConfig: missing CPUID 0x15, unknown nominal frequency)
 * are swallowed: they only make the estimate less precise and show up as lost
 * MTC/CYC counts. Every other error is returned and stops event decoding, as in libipt.
 */
import * as errors from "../base/errors.js";
import { doubleFields } from "../base/halves.js";
import * as packetTypes from "../packet/types.js";
import { type Packet, Packet as PacketClass } from "../packet/types.js";
import { PerfClock, TimeCalibrator, type TimeConfig, TimeTracker, TscQuery, U64 } from "../time/index.js";
import type { PacketCursor } from "./cursor.js";
import type { PtEvent } from "./types.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { ErrorCode } = errors;
const { PacketType } = packetTypes;

/** The time model: libipt's unless `perfClock` (see DecoderConfig.perfClock). */
export interface ClockConfig extends TimeConfig {
  perfClock?: boolean;
  bufferEnds?: readonly number[];
  /** Keep the calibration across overflows (libipt `keep_tcal_on_ovf`; see {@link Clock.overflow}). */
  keepTcalOnOvf?: boolean;
}

/** perf's look-ahead: the packets after an MTC up to the end of its AUX buffer. */
class BufferPackets {
  limit = 0;
  constructor(readonly cursor: PacketCursor) {}

  next(pkt: Packet): number {
    const size = this.cursor.next(pkt);
    return size < 0 || this.cursor.pos > this.limit ? -1 : size;
  }
}

/** The first of `ends` (ascending) at or after `offset`, or `last` when none is. */
function bufferEnd(ends: readonly number[], offset: number, last: number): number {
  let lo = 0;
  let hi = ends.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ends[mid]! < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo < ends.length ? ends[lo]! : last;
}

const BAD_CONFIG = -ErrorCode.BadConfig;
const TWO_32 = 0x1_0000_0000;

/** One wrap of the CTC bits MTC packets carry, in TSC ticks; 0 when CPUID 0x15 is unknown. */
function mtcWrapTsc(config: TimeConfig): number {
  const eax = config.cpuid15Eax >>> 0;
  const ebx = config.cpuid15Ebx >>> 0;
  if (eax === 0 || ebx === 0) return 0;
  return (2 ** ((config.mtcFreq & 0xff) + 8) * ebx) / eax;
}

/** `err` unless it is a configuration error, which only costs precision. */
function fatal(err: number): number {
  return err < 0 && err !== BAD_CONFIG ? err : 0;
}

export class Clock {
  readonly time: TimeTracker;
  readonly tcal: TimeCalibrator;
  /** Linux perf's time instead (the tracker and calibrator then stay unused). */
  readonly perf: PerfClock | undefined;
  /**
   * The type of the packet before the one being applied (PAD aside), which perf's
   * time depends on: the decoder sets it as it moves on.
   */
  prevType: number = PacketType.Bad;
  private readonly fcr = new U64();
  private readonly query = new TscQuery();
  /** perf: its look-ahead (a cursor over the trace of its own) and where the AUX buffers end. */
  private readonly ahead: BufferPackets | undefined;
  private readonly bufferEnds: readonly number[];
  /**
   * With TimeConfig.mtcGapRestart: one MTC wrap in TSC ticks (0: off, or CPUID 0x15
   * unknown, when MTCs do not calibrate anyway), and the estimate at the last MTC.
   */
  private readonly mtcWrapTsc: number;
  private mtcTscHi = 0;
  private mtcTscLo = 0;
  private haveMtcTsc = false;
  private readonly keepTcalOnOvf: boolean;

  /** `ahead`: with perfClock, a cursor of its own over the trace, for perf's look-ahead. */
  constructor(config: ClockConfig, ahead?: PacketCursor) {
    this.time = new TimeTracker(config);
    this.tcal = new TimeCalibrator(config);
    this.perf = config.perfClock ? new PerfClock(config, new PacketClass()) : undefined;
    this.ahead = ahead ? new BufferPackets(ahead) : undefined;
    this.bufferEnds = config.bufferEnds ?? [];
    this.mtcWrapTsc = config.mtcGapRestart === true ? mtcWrapTsc(config) : 0;
    this.keepTcalOnOvf = config.keepTcalOnOvf === true;
    // TSC halves (see doubleFields).
    doubleFields(this, ["mtcTscHi", "mtcTscLo"]);
  }

  /**
   * Forget the time (libipt resets it at every synchronisation). perf's decoder keeps
   * its time across resynchronisation (it starts over only at a new, not consecutive,
   * buffer): a decoder with the perf clock starts from zero once, when made.
   */
  reset(): void {
    this.time.reset();
    this.tcal.reset();
    this.haveMtcTsc = false;
  }

  /**
   * An OVF: the event decoder starts over but keeps the time (libipt's
   * pt_qry_decode_ovf), and the calibration only with keepTcalOnOvf (then updated for
   * the overflow). (The event decoder's, and the timed walk's of analysis/coverage-decode.ts.)
   */
  overflow(): void {
    if (this.keepTcalOnOvf) this.tcal.updateOvf();
    else this.tcal.reset();
    this.haveMtcTsc = false;
  }

  copyFrom(other: Clock): void {
    this.time.copyFrom(other.time);
    this.tcal.copyFrom(other.tcal);
    this.mtcTscHi = other.mtcTscHi;
    this.mtcTscLo = other.mtcTscLo;
    this.haveMtcTsc = other.haveMtcTsc;
    if (this.perf && other.perf) this.perf.copyFrom(other.perf);
    this.prevType = other.prevType;
  }

  /** TSC in PSB+: may calibrate from the cycles since the previous PSB+ TSC. */
  headerTsc(pkt: Packet): number {
    if (this.perf) return this.tsc(pkt);
    if (this.haveMtcTsc) this.checkMtcGap(pkt);
    const err = fatal(this.tcal.headerTsc(pkt));
    return err < 0 ? err : fatal(this.time.updateTsc(pkt));
  }

  tsc(pkt: Packet): number {
    if (this.perf) {
      this.perf.tsc(pkt, this.prevType === PacketType.Cyc);
      return 0;
    }
    if (this.haveMtcTsc) this.checkMtcGap(pkt);
    const err = fatal(this.tcal.updateTsc(pkt));
    return err < 0 ? err : fatal(this.time.updateTsc(pkt));
  }

  /** CBR in PSB+: calibrates without forgetting earlier calibration. */
  headerCbr(pkt: Packet): number {
    if (this.perf) return this.cbr(pkt);
    const err = fatal(this.tcal.headerCbr(pkt));
    return err < 0 ? err : fatal(this.time.updateCbr(pkt));
  }

  cbr(pkt: Packet): number {
    if (this.perf) {
      // A zero ratio is a bad packet to libipt (the event decoder stops); perf divides by it.
      if ((pkt.a & 0xff) === 0) return -ErrorCode.BadPacket;
      this.perf.cbrPacket(pkt);
      return 0;
    }
    const err = fatal(this.tcal.updateCbr(pkt));
    return err < 0 ? err : fatal(this.time.updateCbr(pkt));
  }

  tma(pkt: Packet): number {
    if (this.perf) {
      this.perf.tma(pkt);
      return 0;
    }
    const err = fatal(this.tcal.updateTma(pkt));
    return err < 0 ? err : fatal(this.time.updateTma(pkt));
  }

  /** `end`: the offset after the MTC (where perf's look-ahead starts; -1: none). */
  mtc(pkt: Packet, end = -1): number {
    if (this.perf) {
      const ahead = this.ahead;
      if (ahead && end >= 0) {
        ahead.cursor.pos = end;
        ahead.cursor.block = 0;
        ahead.limit = bufferEnd(this.bufferEnds, end, ahead.cursor.end);
      }
      this.perf.mtc(pkt, this.prevType === PacketType.Cyc, ahead && end >= 0 ? ahead : undefined);
      return 0;
    }
    const err = fatal(this.tcal.updateMtc(pkt));
    if (err < 0) return err;
    const terr = fatal(this.time.updateMtc(pkt));
    if (this.mtcWrapTsc !== 0) {
      const q = this.query;
      this.haveMtcTsc = this.time.queryTsc(q) === 0;
      this.mtcTscHi = q.tscHi;
      this.mtcTscLo = q.tscLo;
    }
    return terr;
  }

  /**
   * A TSC more than one MTC wrap after the last MTC: the calibrator's MTC interval (and
   * its TSC interval, which spans the gap too) start over here; its ratio stays.
   */
  private checkMtcGap(pkt: Packet): void {
    const ticks = (pkt.hi - this.mtcTscHi) * TWO_32 + (pkt.lo - this.mtcTscLo);
    if (ticks <= this.mtcWrapTsc) return;
    this.tcal.updateOvf();
    this.haveMtcTsc = false;
  }

  /** CYC: without a calibration yet, the tracker counts the CYC as lost. */
  cyc(pkt: Packet): number {
    if (this.perf) {
      this.perf.cyc(pkt);
      return 0;
    }
    const err = fatal(this.tcal.updateCyc(pkt));
    if (err < 0) return err;
    const fcr = this.fcr;
    if (this.tcal.queryFcr(fcr) < 0) fcr.set(0, 0);
    return fatal(this.time.updateCyc(pkt, fcr));
  }

  /**
   * CYC in PSB+: libipt counts it, and so does perf's decoder (since Linux 5.12:
   * intel_pt_walk_psbend; without a reference time yet it only counts the cycles). A
   * PSB+ an OVF cuts short ends in one, with the cycles up to the OVF.
   */
  headerCyc(pkt: Packet): number {
    return this.cyc(pkt);
  }

  /** Stamp `ev` with the current estimate (libipt fills it even without a TSC yet). */
  stamp(ev: PtEvent): void {
    const perf = this.perf;
    if (perf) {
      ev.hasTsc = perf.hasTime;
      ev.tscHi = perf.tscHi;
      ev.tscLo = perf.tscLo;
      ev.lostMtc = 0;
      ev.lostCyc = 0;
      ev.timingSeq = perf.updates;
      return;
    }
    const q = this.query;
    ev.hasTsc = this.time.queryTsc(q) === 0;
    ev.tscHi = q.tscHi;
    ev.tscLo = q.tscLo;
    ev.lostMtc = q.lostMtc;
    ev.lostCyc = q.lostCyc;
  }
}
