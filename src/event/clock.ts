/**
 * The event decoder's sense of time: a {@link TimeTracker} (TSC estimate) and a
 * {@link TimeCalibrator} (CYC calibration) updated together from timing packets, the
 * way libipt's event decoder feeds `pt_time` and `pt_tcal`.
 *
 * Configuration errors (-BadConfig: missing CPUID 0x15, unknown nominal frequency)
 * are swallowed: they only make the estimate less precise and show up as lost
 * MTC/CYC counts. Every other error is returned and stops event decoding, as in libipt.
 */
import * as errors from "../base/errors.js";
import type { Packet } from "../packet/types.js";
import { TimeCalibrator, type TimeConfig, TimeTracker, TscQuery, U64 } from "../time/index.js";
import type { PtEvent } from "./types.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { ErrorCode } = errors;

const BAD_CONFIG = -ErrorCode.BadConfig;

/** `err` unless it is a configuration error, which only costs precision. */
function fatal(err: number): number {
  return err < 0 && err !== BAD_CONFIG ? err : 0;
}

export class Clock {
  readonly time: TimeTracker;
  readonly tcal: TimeCalibrator;
  private readonly fcr = new U64();
  private readonly query = new TscQuery();

  constructor(config: TimeConfig) {
    this.time = new TimeTracker(config);
    this.tcal = new TimeCalibrator(config);
  }

  reset(): void {
    this.time.reset();
    this.tcal.reset();
  }

  copyFrom(other: Clock): void {
    this.time.copyFrom(other.time);
    this.tcal.copyFrom(other.tcal);
  }

  /** TSC in PSB+: may calibrate from the cycles since the previous PSB+ TSC. */
  headerTsc(pkt: Packet): number {
    const err = fatal(this.tcal.headerTsc(pkt));
    return err < 0 ? err : fatal(this.time.updateTsc(pkt));
  }

  tsc(pkt: Packet): number {
    const err = fatal(this.tcal.updateTsc(pkt));
    return err < 0 ? err : fatal(this.time.updateTsc(pkt));
  }

  /** CBR in PSB+: calibrates without forgetting earlier calibration. */
  headerCbr(pkt: Packet): number {
    const err = fatal(this.tcal.headerCbr(pkt));
    return err < 0 ? err : fatal(this.time.updateCbr(pkt));
  }

  cbr(pkt: Packet): number {
    const err = fatal(this.tcal.updateCbr(pkt));
    return err < 0 ? err : fatal(this.time.updateCbr(pkt));
  }

  tma(pkt: Packet): number {
    const err = fatal(this.tcal.updateTma(pkt));
    return err < 0 ? err : fatal(this.time.updateTma(pkt));
  }

  mtc(pkt: Packet): number {
    const err = fatal(this.tcal.updateMtc(pkt));
    return err < 0 ? err : fatal(this.time.updateMtc(pkt));
  }

  /** CYC: without a calibration yet, the tracker counts the CYC as lost. */
  cyc(pkt: Packet): number {
    const err = fatal(this.tcal.updateCyc(pkt));
    if (err < 0) return err;
    const fcr = this.fcr;
    if (this.tcal.queryFcr(fcr) < 0) fcr.set(0, 0);
    return fatal(this.time.updateCyc(pkt, fcr));
  }

  /** Stamp `ev` with the current estimate (libipt fills it even without a TSC yet). */
  stamp(ev: PtEvent): void {
    const q = this.query;
    ev.hasTsc = this.time.queryTsc(q) === 0;
    ev.tscHi = q.tscHi;
    ev.tscLo = q.tscLo;
    ev.lostMtc = q.lostMtc;
    ev.lostCyc = q.lostCyc;
  }
}
