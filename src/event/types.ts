/**
 * Events: what the event decoder reports and the flow decoders consume.
 *
 * Types are numbered like libipt's `pt_event_type`, and {@link PtEvent} carries the
 * fields of libipt's `struct pt_event`, flattened into one reusable all-number object
 * (one shape, nothing allocated per event). 64-bit fields are hi/lo unsigned 32-bit
 * halves; the getters at the bottom join them into BigInts at the API edge.
 *
 * Which fields an event uses. The event decoder leaves the others 0, as libipt zeroes
 * its events; consumers that rewrite events (a flow decoder's Tick) may not.
 *
 * | type            | ip (ipHi/ipLo)                 | from        | payload          | small fields / flags |
 * |-----------------|--------------------------------|-------------|------------------|----------------------|
 * | Enabled         | where tracing resumes          |             |                  | Resumed |
 * | Disabled        | first branch target in filter  |             |                  | |
 * | AsyncDisabled   | first branch target in filter  | source (at) |                  | |
 * | AsyncBranch     | destination (to)               | source      |                  | |
 * | Paging          |                                |             | CR3              | NonRoot |
 * | AsyncPaging     | where effective                |             | CR3              | NonRoot |
 * | Overflow        | where tracing resumes          |             |                  | |
 * | ExecMode        | where effective                |             |                  | mode ({@link ExecMode}) |
 * | Tsx             | where effective                |             |                  | Speculative, Aborted |
 * | Stop            |                                |             |                  | |
 * | Vmcs            |                                |             | VMCS base        | |
 * | AsyncVmcs       | where effective                |             | VMCS base        | |
 * | Exstop          | last incomplete instruction    |             |                  | |
 * | Mwait           | the MWAIT                      |             |                  | hints, ext |
 * | Pwre            |                                |             |                  | state, subState, Hw |
 * | Pwrx            |                                |             |                  | last, deepest, Interrupt, Store, Autonomous |
 * | Ptwrite         | the PTWRITE                    |             | payload          | size (bytes) |
 * | Tick            | near which it occurred (made by flow decoders, never by the event decoder) | | | |
 * | Cbr             |                                |             |                  | ratio |
 * | Mnt             |                                |             | payload          | |
 * | Tip             | target                         |             |                  | |
 * | Tnt             |                                |             | bits (oldest = bit size-1) | size (bits) |
 * | Iflags          | where the new IF applies       |             |                  | Iflag |
 * | Interrupt       | faulting / next instruction    |             | CR2 (HasCr2)     | vector |
 * | Iret, Smi, Rsm, Init, Vmentry, Shutdown, Uiret, Syscall | the instruction |  |      | |
 * | Sipi            |                                |             |                  | vector |
 * | Vmexit          | faulting / next instruction    |             | VMXR (HasVmxr)   | vector (HasVector); VMXQ in payload2 (HasVmxq) |
 * | Uintr, Swintr   | the instruction                |             |                  | vector |
 * | Trig            | anchor instruction; 0 and not suppressed when icnt counts from the last anchor | | | trbv, icnt, Mult |
 *
 * `hasTsc`/`tsc`/`lostMtc`/`lostCyc` are the time when the event was completed (at its
 * binding packet), except PWRE (at the PWRE) and Overflow (at the OVF); events an OVF
 * flushes with their IP suppressed carry no time at all (all 0), as in libipt. `tsc`
 * and the loss counts are filled even when `hasTsc` is false (no TSC seen yet).
 */
import { doubleFields, toBigInt } from "../base/halves.js";

/** libipt's `pt_event_type`, same numbers. */
export const EventType = {
  Enabled: 0,
  Disabled: 1,
  AsyncDisabled: 2,
  AsyncBranch: 3,
  Paging: 4,
  AsyncPaging: 5,
  Overflow: 6,
  ExecMode: 7,
  Tsx: 8,
  Stop: 9,
  Vmcs: 10,
  AsyncVmcs: 11,
  Exstop: 12,
  Mwait: 13,
  Pwre: 14,
  Pwrx: 15,
  Ptwrite: 16,
  Tick: 17,
  Cbr: 18,
  Mnt: 19,
  Tip: 20,
  Tnt: 21,
  Iflags: 22,
  Interrupt: 23,
  Iret: 24,
  Smi: 25,
  Rsm: 26,
  Sipi: 27,
  Init: 28,
  Vmentry: 29,
  Vmexit: 30,
  Shutdown: 31,
  Uintr: 32,
  Uiret: 33,
  Trig: 34,
  Swintr: 35,
  Syscall: 36,
} as const;
export type EventType = (typeof EventType)[keyof typeof EventType];

/** What {@link PtEvent.clear} sets: V8 loads and checks an exported binding at every use. */
const FIRST_TYPE: EventType = EventType.Enabled;

export const EVENT_TYPE_COUNT = 37;

/** Names as libipt's tools spell them. */
export const EVENT_NAMES: readonly string[] = [
  "enabled",
  "disabled",
  "async-disabled",
  "async-branch",
  "paging",
  "async-paging",
  "overflow",
  "exec-mode",
  "tsx",
  "stop",
  "vmcs",
  "async-vmcs",
  "exstop",
  "mwait",
  "pwre",
  "pwrx",
  "ptwrite",
  "tick",
  "cbr",
  "mnt",
  "tip",
  "tnt",
  "iflags",
  "interrupt",
  "iret",
  "smi",
  "rsm",
  "sipi",
  "init",
  "vmentry",
  "vmexit",
  "shutdown",
  "uintr",
  "uiret",
  "trig",
  "swintr",
  "syscall",
];

/**
 * The {@link PtEvent.mode} a MODE.Exec announces, numbered like libipt's
 * `pt_exec_mode` (and the isa layer's `ExecMode`): 0 unknown (CS.L and CS.D both
 * set, reserved), 1 16-bit, 2 32-bit, 3 64-bit.
 */
export function execMode(csl: boolean, csd: boolean): number {
  if (csl) return csd ? 0 : 3;
  return csd ? 2 : 1;
}

/** Bits of {@link PtEvent.flags}: libipt's one-bit fields of the event variants. */
export const EventFlag = {
  Resumed: 1 << 0,
  NonRoot: 1 << 1,
  Speculative: 1 << 2,
  Aborted: 1 << 3,
  Hw: 1 << 4,
  Interrupt: 1 << 5,
  Store: 1 << 6,
  Autonomous: 1 << 7,
  Iflag: 1 << 8,
  HasCr2: 1 << 9,
  HasVector: 1 << 10,
  HasVmxr: 1 << 11,
  HasVmxq: 1 << 12,
  Mult: 1 << 13,
} as const;

/**
 * Decoder status bits, libipt's `pt_status_flag`: a non-negative status is a set of
 * these; a negative one is `-ErrorCode`.
 */
export const Status = {
  /** An event is pending: fetch it before going on. */
  EventPending: 1 << 0,
  /** The IP has been suppressed. */
  IpSuppressed: 1 << 1,
  /** The end of the trace has been reached. */
  Eos: 1 << 2,
} as const;

/** One event; decoders fill a caller's instance. */
export class PtEvent {
  type: EventType = EventType.Enabled;
  /** libipt `ip_suppressed`: the ip field is not valid. */
  ipSuppressed = false;
  /** libipt `status_update`: the event only reports state (from PSB+), no change. */
  statusUpdate = false;
  /**
   * The trace offset of the PSB whose PSB+ this status update restates, on the first
   * (enabled/disabled) status update of each PSB+; else -1. (ptkit's: a decoder that
   * reads ahead has read further than the PSB its events come from.)
   */
  psbOffset = -1;
  hasTsc = false;
  tscHi = 0;
  tscLo = 0;
  lostMtc = 0;
  lostCyc = 0;
  /**
   * With DecoderConfig.perfClock: how many times Linux perf's decoder has restarted
   * its count of instructions since a timestamp (at every TSC, MTC and timed CYC, the
   * time moving or not); 0 otherwise. Not libipt's.
   */
  timingSeq = 0;

  /** The event's instruction address (see the table in the module comment). */
  ipHi = 0;
  ipLo = 0;
  /**
   * AsyncBranch source, AsyncDisabled `at`; on a PSB+'s Disabled status update, the
   * IP of a FUP in the header that BDM70 set aside (tracing is off; Linux perf shows
   * the PSB at that IP), else 0.
   */
  fromHi = 0;
  fromLo = 0;
  /**
   * AsyncBranch and AsyncDisabled: the time stamp of the FUP that gave `from` (TSC
   * halves and {@link timingSeq}; the event's own is its TIP's), else 0. Not libipt's:
   * Linux perf's decoder, without an IP, takes up at such a FUP at its time.
   */
  fromTscHi = 0;
  fromTscLo = 0;
  fromTimingSeq = 0;
  /** CR3, VMCS base, PTWRITE/MNT payload, TNT bits, CR2, VMXR. */
  payloadHi = 0;
  payloadLo = 0;
  /** VMXQ (Vmexit). */
  payload2Hi = 0;
  payload2Lo = 0;
  /**
   * Which of the event's addresses came whole from their packet (IPBytes 011b or
   * 110b, see LastIp.full): 1 the ip, 2 from (an asynchronous branch's FUP). Not
   * libipt's: where Linux perf's decoder may take up again after an error.
   */
  fullIps = 0;
  /** {@link EventFlag} bits. */
  flags = 0;
  /** ExecMode: the {@link ExecMode}. */
  mode = 0;
  /** Ptwrite: payload bytes; Tnt: number of bits. */
  size = 0;
  /** Interrupt, Sipi, Vmexit, Uintr, Swintr. */
  vector = 0;
  /** Mwait hints (EAX) and extensions (ECX). */
  hints = 0;
  ext = 0;
  /** Pwre: resolved thread C-state and sub C-state. */
  state = 0;
  subState = 0;
  /** Pwrx: core C-state at wake and deepest core C-state. */
  last = 0;
  deepest = 0;
  /** Cbr: core:bus ratio. */
  ratio = 0;
  /** Trig: trigger bit vector and instruction count. */
  trbv = 0;
  icnt = 0;

  /** Zero every field (type Enabled), as libipt zeroes a new event. */
  clear(): this {
    this.type = FIRST_TYPE;
    this.ipSuppressed = false;
    this.statusUpdate = false;
    this.psbOffset = -1;
    this.hasTsc = false;
    this.tscHi = 0;
    this.tscLo = 0;
    this.lostMtc = 0;
    this.lostCyc = 0;
    this.timingSeq = 0;
    this.ipHi = 0;
    this.ipLo = 0;
    this.fromHi = 0;
    this.fromLo = 0;
    this.fromTscHi = 0;
    this.fromTscLo = 0;
    this.fromTimingSeq = 0;
    this.payloadHi = 0;
    this.payloadLo = 0;
    this.payload2Hi = 0;
    this.payload2Lo = 0;
    this.fullIps = 0;
    this.flags = 0;
    this.mode = 0;
    this.size = 0;
    this.vector = 0;
    this.hints = 0;
    this.ext = 0;
    this.state = 0;
    this.subState = 0;
    this.last = 0;
    this.deepest = 0;
    this.ratio = 0;
    this.trbv = 0;
    this.icnt = 0;
    return this;
  }

  copyFrom(o: PtEvent): this {
    this.type = o.type;
    this.ipSuppressed = o.ipSuppressed;
    this.statusUpdate = o.statusUpdate;
    this.psbOffset = o.psbOffset;
    this.hasTsc = o.hasTsc;
    this.tscHi = o.tscHi;
    this.tscLo = o.tscLo;
    this.lostMtc = o.lostMtc;
    this.lostCyc = o.lostCyc;
    this.timingSeq = o.timingSeq;
    this.ipHi = o.ipHi;
    this.ipLo = o.ipLo;
    this.fromHi = o.fromHi;
    this.fromLo = o.fromLo;
    this.fromTscHi = o.fromTscHi;
    this.fromTscLo = o.fromTscLo;
    this.fromTimingSeq = o.fromTimingSeq;
    this.payloadHi = o.payloadHi;
    this.payloadLo = o.payloadLo;
    this.payload2Hi = o.payload2Hi;
    this.payload2Lo = o.payload2Lo;
    this.fullIps = o.fullIps;
    this.flags = o.flags;
    this.mode = o.mode;
    this.size = o.size;
    this.vector = o.vector;
    this.hints = o.hints;
    this.ext = o.ext;
    this.state = o.state;
    this.subState = o.subState;
    this.last = o.last;
    this.deepest = o.deepest;
    this.ratio = o.ratio;
    this.trbv = o.trbv;
    this.icnt = o.icnt;
    return this;
  }

  /** API edge: 64-bit fields as exact BigInts. */
  get ip(): bigint {
    return toBigInt(this.ipHi, this.ipLo);
  }
  get from(): bigint {
    return toBigInt(this.fromHi, this.fromLo);
  }
  get payload(): bigint {
    return toBigInt(this.payloadHi, this.payloadLo);
  }
  get payload2(): bigint {
    return toBigInt(this.payload2Hi, this.payload2Lo);
  }
  get tsc(): bigint {
    return toBigInt(this.tscHi, this.tscLo);
  }
}
// Addresses, times, payloads: see doubleFields.
doubleFields(new PtEvent(), [
  "tscHi",
  "tscLo",
  "ipHi",
  "ipLo",
  "fromHi",
  "fromLo",
  "fromTscHi",
  "fromTscLo",
  "payloadHi",
  "payloadLo",
  "payload2Hi",
  "payload2Lo",
]);
