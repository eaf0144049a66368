/**
 * The event decoder: packets in, events out (libipt's `pt_evt_*`).
 *
 * It turns the packet stream into the events the flow decoders need (Tnt and Tip
 * with the branch information, Enabled/Disabled, asynchronous branches, mode and
 * paging changes, overflows, ...) and those users want (power, PTWRITE, Event Trace,
 * ...), each stamped with the estimated TSC. PSB+ contents come out as status
 * updates at PSBEND. Errata of the traced CPU are worked around as libipt does:
 * BDM70 (PSB+), SKD010, APL11 and APL12 (overflows), and SKD007 and SKZ84 in the
 * packet decoder; the others concern the flow decoders.
 *
 * Packets libipt's event decoder does not know (BBP, BIP, BEP) are skipped like
 * libipt skips unknown packets; where an unknown packet cannot be skipped (inside
 * PSB+) they are -BadContext.
 *
 * Nothing is allocated per packet or event; errors are returned, never thrown.
 */
import * as errors from "../base/errors.js";
import { TraceBytes } from "../packet/trace-bytes.js";
import * as packetTypes from "../packet/types.js";
import type { TimeTracker } from "../time/index.js";
import * as branch from "./branch.js";
import type { DecoderConfig } from "./config.js";
import * as context from "./context.js";
import * as eventTrace from "./event-trace.js";
import * as info from "./info.js";
import * as overflow from "./overflow.js";
import * as power from "./power.js";
import * as psb from "./psb.js";
import { DecoderState } from "./state.js";
import type { PtEvent } from "./types.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { ErrorCode } = errors;
const { Ipc, PacketType } = packetTypes;
const { decodeFup, decodeTip, decodeTipPgd, decodeTipPge, decodeTnt } = branch;
const { decodeModeExec, decodeModeTsx, decodePip, decodeVmcs } = context;
const { decodeCfe, decodeEvd, decodeTrig } = eventTrace;
const { decodeCbr, decodeMnt, decodePtw, decodeStop } = info;
const { decodeOvf } = overflow;
const { decodeExstop, decodeMwait, decodePwre, decodePwrx } = power;
const { decodePsb, decodePsbEnd } = psb;

export class EventDecoder {
  private readonly s: DecoderState;

  /**
   * Decode `trace[begin, end)` (a trace read a window at a time: all of it); offsets
   * are relative to `begin`, as libipt's are to `config->begin`. Call a sync method
   * before {@link next}.
   */
  constructor(
    trace: Uint8Array | TraceBytes,
    config: DecoderConfig,
    options: { begin?: number; end?: number } = {},
  ) {
    this.s = new DecoderState(traceBytes(trace, options), config);
  }

  /** The trace's bytes (shared by every copy of this decoder). */
  get bytes(): TraceBytes {
    return this.s.cursor.bytes;
  }

  get config(): DecoderConfig {
    return this.s.config;
  }

  /** Synchronise onto the next PSB and read its PSB+ (libipt `pt_evt_sync_forward`). 0 or -error. */
  syncForward(): number {
    const s = this.s;
    s.reset();
    const err = s.cursor.syncForward();
    return err < 0 ? err : this.start();
  }

  /**
   * Synchronise onto the last PSB before the current position (before the end when
   * not synchronised) whose PSB+ ends before it (libipt `pt_evt_sync_backward`).
   */
  syncBackward(): number {
    const s = this.s;
    const cursor = s.cursor;
    const start = cursor.pos < 0 ? cursor.end : cursor.pos;
    let sync = start;
    for (;;) {
      s.reset();
      let pos: number;
      do {
        const err = cursor.syncBackward();
        if (err < 0) return err;
        pos = cursor.pos;
      } while (sync <= pos);
      sync = pos;
      const err = this.start();
      if (cursor.pos < start) return err;
    }
  }

  /** Synchronise onto the PSB at `offset` (libipt `pt_evt_sync_set`): -NoSync if none. */
  syncSet(offset: number): number {
    if (!Number.isSafeInteger(offset)) return -ErrorCode.Invalid;
    const s = this.s;
    s.reset();
    const err = s.cursor.syncSet(offset);
    return err < 0 ? err : this.start();
  }

  /**
   * Offset of the packet the next event comes from (libipt `pt_evt_get_offset`), or
   * -NoSync.
   */
  get offset(): number {
    const s = this.s;
    return s.cursor.pos < 0 ? -ErrorCode.NoSync : s.cursor.pos - s.packet.size;
  }

  /** Offset of the last PSB synchronised to or passed (libipt `pt_evt_get_sync_offset`), or -NoSync. */
  get syncOffset(): number {
    const sync = this.s.cursor.syncOffset;
    return sync < 0 ? -ErrorCode.NoSync : sync;
  }

  /**
   * Offset just past the packet the next event comes from; -1 before the first sync
   * (libipt `pt_evt_pos`). Flow decoders compare it to tell whether a copy of the
   * decoder moved on.
   */
  get pos(): number {
    return this.s.cursor.pos;
  }

  /**
   * The current time state (libipt's `evdec.time`): what the query decoder keeps as
   * the time of the last event. Read-only for users; copy it with
   * `TimeTracker.copyFrom`.
   */
  get time(): TimeTracker {
    return this.s.clock.time;
  }

  /**
   * Take over another decoder's state, which must decode the same trace with the same
   * configuration: flow decoders read ahead on a copy and go back by copying again
   * (libipt copies `struct pt_event_decoder`).
   */
  copyFrom(other: EventDecoder): this {
    this.s.copyFrom(other.s);
    return this;
  }

  /** A decoder over the same trace in the same state. */
  clone(): EventDecoder {
    return new EventDecoder(this.s.cursor.bytes, this.s.config).copyFrom(this);
  }

  /**
   * The next event, into `ev` (libipt `pt_evt_next`): 0, or -error (-Eos at the end of
   * the trace). On error `ev` holds no meaningful event; the error repeats until the
   * decoder is synchronised again.
   */
  next(ev: PtEvent): number {
    const s = this.s;
    s.standalone = ev;
    let status: number;
    for (;;) {
      status = dispatch(s);
      if (status <= 0) break;
      // A handler asked for the next packet, which therefore is not bound.
      if (s.event !== null) return -ErrorCode.Internal;
      s.bound = false;
      s.fetchPacket();
    }
    if (status < 0) return status;
    const out = s.event;
    s.event = null;
    if (out === null) return -ErrorCode.Internal;
    if (out !== ev) ev.copyFrom(out);
    return 0;
  }

  /**
   * Linux perf's decoder without an IP (after a decode error, until a packet gives one
   * whole: BlockDecoder.perfResync) passes TNTs, and TIPs whose IP is compressed, by:
   * go past the packets that would make those events, as {@link next} would, without
   * making them (their IPs go to the last IP, and the timing packets between them to
   * the clock). From where no packet is bound and no event waits, with perf's clock
   * (whose timing packets never fail); it stops before anything else, for next() to
   * decode. The events passed by, and the last one's time stamp in `stamp` when any.
   * (A trace of a kernel whose code is missing passes most of the kernel's packets this
   * way: made one by one, they cost about 300 ns each.)
   */
  skipWithoutIp(stamp: PtEvent): number {
    const s = this.s;
    if (!s.config.perfClock || s.bound || s.event !== null || !s.queue.empty) return 0;
    const pkt = s.packet;
    const clock = s.clock;
    let n = 0;
    // The last event passed by has no stamp yet: it gets the clock's time before the next timing packet.
    let unstamped = false;
    for (;;) {
      const type = pkt.type;
      if (type === PacketType.Tnt8 || type === PacketType.Tnt64) {
        if (!s.enabled) break;
      } else if (type === PacketType.Tip) {
        const ipc = pkt.a;
        if (!s.enabled || (ipc !== Ipc.Update16 && ipc !== Ipc.Update32 && ipc !== Ipc.Update48)) break;
        s.ip.update(pkt);
      } else {
        if (type === PacketType.Cyc) {
          if (unstamped) clock.stamp(stamp);
          clock.cyc(pkt);
        } else if (type === PacketType.Mtc) {
          if (unstamped) clock.stamp(stamp);
          clock.mtc(pkt, s.cursor.pos);
        } else if (type === PacketType.Tsc) {
          if (unstamped) clock.stamp(stamp);
          clock.tsc(pkt);
        } else if (type === PacketType.Tma) {
          if (unstamped) clock.stamp(stamp);
          clock.tma(pkt);
        } else break;
        unstamped = false;
        s.fetchPacket();
        continue;
      }
      n++;
      unstamped = true;
      s.fetchPacket();
    }
    if (unstamped) clock.stamp(stamp);
    return n;
  }

  /** Read the PSB+ at the synchronisation point (libipt `pt_evt_start`). */
  private start(): number {
    const s = this.s;
    s.status = 0;
    s.fetchPacket();
    switch (s.packet.type) {
      case PacketType.Psb: {
        const err = decodePsb(s);
        return Math.min(err, 0);
      }
      case PacketType.Bad:
      case PacketType.Invalid:
        return s.status < 0 ? s.status : -ErrorCode.Internal;
      default:
        return -ErrorCode.NoSync;
    }
  }
}

/** `trace[begin, end)` as {@link TraceBytes}. */
function traceBytes(trace: Uint8Array | TraceBytes, options: { begin?: number; end?: number }): TraceBytes {
  if (trace instanceof TraceBytes) return trace;
  const end = Math.min(Math.max(options.end ?? trace.length, 0), trace.length);
  const begin = Math.min(Math.max(options.begin ?? 0, 0), end);
  return TraceBytes.of(trace.subarray(begin, end));
}

/** Process the current packet: 0 (an event is ready), > 0 (next packet), -error. */
function dispatch(s: DecoderState): number {
  const pkt = s.packet;
  switch (pkt.type) {
    case PacketType.Tnt8:
    case PacketType.Tnt64:
      return decodeTnt(s, pkt);
    case PacketType.Tip:
      return decodeTip(s, pkt);
    case PacketType.Fup:
      return decodeFup(s, pkt);
    case PacketType.TipPge:
      return decodeTipPge(s, pkt);
    case PacketType.TipPgd:
      return decodeTipPgd(s, pkt);
    case PacketType.Cyc:
      return timing(s.clock.cyc(pkt));
    case PacketType.Mtc:
      return timing(s.clock.mtc(pkt, s.cursor.pos));
    case PacketType.Tsc:
      return timing(s.clock.tsc(pkt));
    case PacketType.Tma:
      return timing(s.clock.tma(pkt));
    case PacketType.Cbr:
      return decodeCbr(s, pkt);
    case PacketType.ModeExec:
      return decodeModeExec(s, pkt);
    case PacketType.ModeTsx:
      return decodeModeTsx(s, pkt);
    case PacketType.Pip:
      return decodePip(s, pkt);
    case PacketType.Vmcs:
      return decodeVmcs(s, pkt);
    case PacketType.Ptw:
      return decodePtw(s, pkt);
    case PacketType.Psb: {
      const err = decodePsb(s);
      return err <= 0 ? err : dispatch(s);
    }
    case PacketType.PsbEnd:
      return decodePsbEnd(s);
    case PacketType.Ovf:
      return decodeOvf(s);
    case PacketType.Stop:
      return decodeStop(s);
    case PacketType.Mnt:
      return decodeMnt(s, pkt);
    case PacketType.Exstop:
      return decodeExstop(s, pkt);
    case PacketType.Mwait:
      return decodeMwait(s, pkt);
    case PacketType.Pwre:
      return decodePwre(s, pkt);
    case PacketType.Pwrx:
      return decodePwrx(s, pkt);
    case PacketType.Cfe:
      return decodeCfe(s, pkt);
    case PacketType.Evd:
      return decodeEvd(s, pkt);
    case PacketType.Trig:
      return decodeTrig(s, pkt);
    case PacketType.Bad:
    case PacketType.Invalid:
      // A decode error, reported here; an SKZ84-corrupted packet is skipped.
      return s.status < 0 ? s.status : 1;
    default:
      // PAD never gets here; BBP, BIP and BEP are unknown to libipt's event decoder.
      return 1;
  }
}

/** A timing packet's result as a handler's: next packet, or -error. */
function timing(err: number): number {
  return err < 0 ? err : 1;
}
