/**
 * The event decoder's state and the steps every packet handler shares (libipt's
 * `struct pt_event_decoder` with `pt_evt_fetch_packet`, `pt_evt_event_time`,
 * `pt_evt_event_ip`). The handlers live in the modules named after what they decode;
 * {@link EventDecoder} is the public face.
 *
 * Handlers return 0 when they published an event (in {@link DecoderState.event}), a
 * positive number when they need the next packet, or -error. A handler that is done
 * with its packet fetches the next one before returning 0; one that returns 0 without
 * fetching sees its packet again on the next call (to publish further events that
 * packet completes).
 */

import * as errors from "../base/errors.js";
import { packetQuirks } from "../cpu/errata.js";
import { LastIp } from "../packet/last-ip.js";
import type { TraceBytes } from "../packet/trace-bytes.js";
import * as packetTypes from "../packet/types.js";
import { Packet } from "../packet/types.js";
import { Clock } from "./clock.js";
import type { DecoderConfig } from "./config.js";
import { PacketCursor } from "./cursor.js";
import { EventQueue } from "./queue.js";
import { PtEvent } from "./types.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { ErrorCode } = errors;
const { PacketType } = packetTypes;

/** The size of an OVF packet (02 F3). */
const OVF_SIZE = 2;

export class DecoderState {
  readonly config: DecoderConfig;
  readonly cursor: PacketCursor;
  /** The packet being processed; type Bad after a decode error (kept in `status`). */
  readonly packet = new Packet();
  /**
   * The decode error behind a Bad packet: -NoSync until synchronised, 0 after, and
   * -NoSync again after an OVF (libipt resets its decoder there), which an SKZ84
   * packet then reports as libipt does.
   */
  status = -ErrorCode.NoSync;
  readonly ip = new LastIp();
  readonly clock: Clock;
  readonly queue = new EventQueue();
  /** The event to publish, once a handler returned 0. */
  event: PtEvent | null = null;
  /** Where standalone events are built: the caller's event, set by each `next`. */
  standalone = new PtEvent();

  /** MODE.Exec state, valid once the first MODE.Exec was seen. */
  modeExecValid = false;
  iflag = false;
  csd = false;
  csl = false;
  /** Tracing is enabled (PacketEn). */
  enabled = false;
  /**
   * The current packet completed queued events; once they are published it must not
   * also be taken as a packet of its own.
   */
  bound = false;

  readonly enableIflags: boolean;

  /** Look-ahead scratch: cursors, packets and clocks that never escape a call. */
  readonly scan: PacketCursor;
  readonly scan2: PacketCursor;
  readonly scanPacket = new Packet();
  readonly scanPacket2 = new Packet();
  readonly scanClock: Clock;
  readonly tmpEvent = new PtEvent();

  constructor(bytes: TraceBytes, config: DecoderConfig) {
    this.config = config;
    const quirks = packetQuirks(config.errata);
    this.cursor = new PacketCursor(bytes, quirks);
    this.scan = new PacketCursor(bytes, quirks);
    this.scan2 = new PacketCursor(bytes, quirks);
    // perf's clock looks ahead with a cursor of its own (never one a caller is using).
    const ahead = () => (config.perfClock ? new PacketCursor(bytes, quirks) : undefined);
    this.clock = new Clock(config, ahead());
    this.scanClock = new Clock(config, ahead());
    this.enableIflags = config.enableIflagsEvents;
  }

  /**
   * Forget everything but the packet position (libipt `pt_evt_reset`); with
   * `keepClock` the clock too (an OVF: see Clock.overflow).
   */
  reset(keepClock = false): void {
    this.packet.type = PacketType.Bad;
    this.status = -ErrorCode.NoSync;
    this.event = null;
    this.enabled = false;
    this.bound = false;
    this.modeExecValid = false;
    this.ip.reset();
    if (!keepClock) this.clock.reset();
    this.queue.clear();
  }

  /** Copy another decoder's state over the same trace (no event in flight). */
  copyFrom(other: DecoderState): void {
    this.cursor.copyFrom(other.cursor);
    this.packet.copyFrom(other.packet);
    this.status = other.status;
    this.ip.lo = other.ip.lo;
    this.ip.hi = other.ip.hi;
    this.ip.have = other.ip.have;
    this.ip.suppressed = other.ip.suppressed;
    this.clock.copyFrom(other.clock);
    this.queue.copyFrom(other.queue);
    this.event = null;
    this.modeExecValid = other.modeExecValid;
    this.iflag = other.iflag;
    this.csd = other.csd;
    this.csl = other.csl;
    this.enabled = other.enabled;
    this.bound = other.bound;
  }

  /**
   * Move to the next packet, skipping PAD, and return 0. A decode error leaves a Bad
   * packet of size 0 and the error in `status`, to be reported when it is processed.
   */
  fetchPacket(): number {
    const pkt = this.packet;
    const cursor = this.cursor;
    if (pkt.type !== PacketType.Pad) this.clock.prevType = pkt.type;
    if (cursor.nextFrequent(pkt) > 0) return 0;
    let size: number;
    do {
      size = cursor.next(pkt);
      if (size < 0) {
        pkt.type = PacketType.Bad;
        pkt.size = 0;
        this.status = size;
        return 0;
      }
    } while (pkt.type === PacketType.Pad);
    // An OVF that cut a CYC short (SKD007) spans three bytes; libipt places it at its
    // own two after the CYC's first byte, which is where offsets report it.
    if (pkt.type === PacketType.Ovf) pkt.size = OVF_SIZE;
    return 0;
  }

  /** A zeroed standalone event (published directly, never queued). */
  newStandalone(): PtEvent {
    return this.standalone.clear();
  }

  /** Stamp `ev` with the current time. */
  eventTime(ev: PtEvent): void {
    this.clock.stamp(ev);
  }

  /** Give `ev` the last IP, or mark its IP suppressed when there is none. */
  eventIp(ev: PtEvent): void {
    const ip = this.ip;
    if (ip.have && !ip.suppressed) {
      ev.ipHi = ip.hi;
      ev.ipLo = ip.lo;
      if (ip.full) ev.fullIps |= 1;
      else ev.fullIps &= 2;
    } else {
      ev.ipHi = 0;
      ev.ipLo = 0;
      ev.ipSuppressed = true;
    }
  }

  /** Publish `ev` after stamping it with the time; returns the handler's 0. */
  publishTimed(ev: PtEvent): number {
    this.clock.stamp(ev);
    this.event = ev;
    return 0;
  }
}
