/**
 * What the event and flow decoders need to know about how the trace was recorded:
 * libipt's `struct pt_config` minus the buffer (errata, time parameters, the
 * IA32_RTIT_ADDRn filter configuration, decoder flags).
 */
import { noErrata } from "../cpu/index.js";
import type { TimeConfig } from "../time/index.js";

/** IA32_RTIT_CTL.ADDRn_CFG and IA32_RTIT_ADDRn_A/B, as libipt's `pt_conf_addr_filter`. */
export interface AddrFilter {
  /** ADDRn_CFG for n = 0..3 (0 unused, 1 filter, 2 TraceStop). */
  cfg: [number, number, number, number];
  /** IA32_RTIT_ADDRn_A / _B for n = 0..3. */
  a: [bigint, bigint, bigint, bigint];
  b: [bigint, bigint, bigint, bigint];
}

export interface DecoderConfig extends TimeConfig {
  addrFilter: AddrFilter;
  /** Keep the time calibration across overflows (libipt `keep_tcal_on_ovf`). */
  keepTcalOnOvf: boolean;
  /** Report Iflags events (libipt `enable_iflags_events`). */
  enableIflagsEvents: boolean;
  /** Report Tick events (libipt `enable_tick_events`; insn and block decoders). */
  enableTickEvents: boolean;
  /**
   * With tick events: a TNT's tick only after the block that takes one of its bits, as
   * Linux perf's decoder times a branch by the packet it takes (libipt reports it where
   * it reads ahead to the TNT: after the block that used up the TNT before it, or that
   * took the TIP before it). Not libipt's; `ptkit perf`'s perf script lines use it.
   */
  tickOnUse: boolean;
  /**
   * Time as Linux perf's decoder keeps it (time/perf-clock.ts) instead of libipt's:
   * `ptkit perf`'s perf script lines use it. Not libipt's.
   */
  perfClock: boolean;
  /**
   * With perfClock: where the trace's AUX buffers end (trace offsets, ascending), as
   * perf's look-ahead for its CYC ratio stops at the end of the buffer it is in.
   * Empty: one buffer.
   */
  bufferEnds?: readonly number[];
  /**
   * Decode in 64-bit mode until a MODE.Exec says otherwise (as Linux perf, which takes
   * the mode from the binary, not the trace: after a PSB+ cut short by an overflow
   * there is no MODE.Exec). Not libipt's; `ptkit perf`'s perf script lines use it.
   */
  perfMode64?: boolean;
  /** Block decoder: end a block after a call (libipt `end_on_call`). */
  endOnCall: boolean;
  /** Block decoder: end a block after a jump (libipt `end_on_jump`). */
  endOnJump: boolean;
}

/** libipt's zero-initialized configuration: no errata, no filter, no flags. */
export function defaultDecoderConfig(): DecoderConfig {
  return {
    mtcFreq: 0,
    nomFreq: 0,
    cpuid15Eax: 0,
    cpuid15Ebx: 0,
    errata: noErrata(),
    addrFilter: { cfg: [0, 0, 0, 0], a: [0n, 0n, 0n, 0n], b: [0n, 0n, 0n, 0n] },
    keepTcalOnOvf: false,
    enableIflagsEvents: false,
    enableTickEvents: false,
    tickOnUse: false,
    perfClock: false,
    endOnCall: false,
    endOnJump: false,
  };
}
