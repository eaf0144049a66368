/**
 * The packets that carry control flow: TNT, TIP, TIP.PGE, TIP.PGD and FUP, and the
 * queued events they complete.
 *
 * A FUP either completes events waiting for it (PTWRITE, MODE.TSX, EXSTOP, CFE, an
 * OVF, ...) or, with nothing waiting, is the source of an asynchronous branch whose
 * destination the next TIP (or TIP.PGD: an asynchronous disable) gives. A TIP-family
 * packet publishes its own event first, then the events bound to it.
 */
import * as errors from "../base/errors.js";
import type { Packet } from "../packet/types.js";
import * as fupIp from "./fup-ip.js";
import * as queue from "./queue.js";
import type { DecoderState } from "./state.js";
import type { PtEvent } from "./types.js";
import * as eventTypes from "./types.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { ErrorCode } = errors;
const { Binding } = queue;
const { EventType } = eventTypes;
const { takesFupIp } = fupIp;

export function decodeTnt(s: DecoderState, pkt: Packet): number {
  if (!s.enabled) return -ErrorCode.BadContext;
  const ev = s.newStandalone();
  ev.type = EventType.Tnt;
  ev.payloadHi = pkt.hi;
  ev.payloadLo = pkt.lo;
  ev.size = pkt.a;
  s.publishTimed(ev);
  return s.fetchPacket();
}

export function decodeFup(s: DecoderState, pkt: Packet): number {
  const err = s.ip.update(pkt);
  if (err < 0) return err;

  const queue = s.queue;
  if (queue.pending(Binding.FupBound)) s.bound = true;
  const ev = queue.dequeue(Binding.Fup | Binding.FupBound);
  if (!ev) {
    if (s.bound) return 1;
    // An asynchronous branch needs its source; a suppressed one is an error here.
    const status = s.ip.status();
    if (status < 0) return status;
    const branch = queue.enqueue(Binding.Tip);
    if (!branch) return -ErrorCode.NoMem;
    branch.type = EventType.AsyncBranch;
    branch.fromHi = s.ip.hi;
    branch.fromLo = s.ip.lo;
    if (s.ip.full) branch.fullIps = 2;
    // The FUP's time (the event gets its TIP's).
    const t = s.tmpEvent;
    s.eventTime(t);
    branch.fromTscHi = t.tscHi;
    branch.fromTscLo = t.tscLo;
    branch.fromTimingSeq = t.timingSeq;
    return 1;
  }

  switch (ev.type) {
    case EventType.Overflow:
      // The overflow keeps the time of the OVF: the gap to the next event shows its length.
      s.eventIp(ev);
      s.enabled = true;
      s.event = ev;
      return 0;
    case EventType.Rsm:
    case EventType.Sipi:
      s.event = ev;
      if (!ev.ipSuppressed) return -ErrorCode.Internal;
      return s.publishTimed(ev);
    case IGNORE:
      return decodeFup(s, pkt);
    default:
      if (takesFupIp(ev.type)) {
        s.eventIp(ev);
        return s.publishTimed(ev);
      }
      s.event = ev;
      return -ErrorCode.BadContext;
  }
}

/**
 * Events that only make a packet bound (a MODE.Exec that changed nothing, a CFE of
 * unknown type): dropped where they bind, never published. libipt reuses the Tick
 * type for them, which the event decoder never reports otherwise.
 */
export const IGNORE = EventType.Tick;

export function decodeTip(s: DecoderState, pkt: Packet): number {
  if (!s.enabled) return -ErrorCode.BadContext;
  const err = s.ip.update(pkt);
  if (err < 0) return err;

  // The branch goes first: other events bind to the branch target, so users can
  // apply them after reaching it.
  if (!s.bound) return tipEvent(s);

  const ev = s.queue.dequeue(Binding.Tip);
  if (!ev) return 1;
  switch (ev.type) {
    case EventType.ExecMode:
    case EventType.AsyncPaging:
    case EventType.AsyncVmcs:
    case EventType.Iflags:
      s.eventIp(ev);
      return s.publishTimed(ev);
    case IGNORE:
      return decodeTip(s, pkt);
    default:
      // libipt says -pte_internal for a second asynchronous branch here, but a
      // corrupt or hostile trace gets here too: it is a packet out of context.
      s.event = ev;
      return -ErrorCode.BadContext;
  }
}

/** The TIP's branch: an asynchronous branch completed (put first), or a Tip event. */
function tipEvent(s: DecoderState): number {
  s.bound = true;
  const queue = s.queue;
  if (!queue.find(Binding.Tip, EventType.AsyncBranch)) {
    const ev = s.newStandalone();
    ev.type = EventType.Tip;
    s.eventIp(ev);
    return s.publishTimed(ev);
  }
  const ev = queue.dequeue(Binding.Tip);
  if (!ev) return -ErrorCode.Internal;
  if (ev.type !== EventType.AsyncBranch) {
    // Another event bound to the TIP came first: the branch takes its place. Look the
    // branch up only now: dequeue may have moved the queue's slots.
    const branch = queue.find(Binding.Tip, EventType.AsyncBranch);
    if (!branch) return -ErrorCode.Internal;
    swap(ev, branch, s.tmpEvent);
  }
  s.event = ev;
  s.eventIp(ev);
  return s.publishTimed(ev);
}

function swap(a: PtEvent, b: PtEvent, tmp: PtEvent): void {
  tmp.copyFrom(a);
  a.copyFrom(b);
  b.copyFrom(tmp);
}

export function decodeTipPge(s: DecoderState, pkt: Packet): number {
  const err = s.ip.update(pkt);
  if (err < 0) return err;

  // The enable goes first, so users need not hold back the events bound to it.
  if (!s.bound) {
    const ev = s.newStandalone();
    ev.type = EventType.Enabled;
    s.eventIp(ev);
    s.enabled = true;
    s.bound = true;
    return s.publishTimed(ev);
  }

  const ev = s.queue.dequeue(Binding.Tip);
  if (!ev) return 1;
  switch (ev.type) {
    case EventType.ExecMode:
    case EventType.Iflags:
      s.eventIp(ev);
      return s.publishTimed(ev);
    case IGNORE:
      return decodeTipPge(s, pkt);
    default:
      s.event = ev;
      return -ErrorCode.BadContext;
  }
}

export function decodeTipPgd(s: DecoderState, pkt: Packet): number {
  const err = s.ip.update(pkt);
  if (err < 0) return err;

  const ev = s.queue.dequeue(Binding.Tip);
  if (!ev) {
    if (s.bound) return 1;
    const disabled = s.newStandalone();
    disabled.type = EventType.Disabled;
    s.eventIp(disabled);
    s.publishTimed(disabled);
    s.enabled = false;
    return s.fetchPacket();
  }

  s.event = ev;
  switch (ev.type) {
    case EventType.AsyncBranch:
      // The branch source stays in `from` as the disable's `at`.
      ev.type = EventType.AsyncDisabled;
      s.eventIp(ev);
      s.enabled = false;
      s.bound = true;
      break;
    case EventType.AsyncPaging:
    case EventType.AsyncVmcs:
      // These follow the asynchronous branch turned into a disable above.
      if (!s.bound) return -ErrorCode.Internal;
      ev.ipSuppressed = true;
      break;
    case EventType.ExecMode:
      // Tracing stops with the branch, so the event's location is never reached.
      ev.ipSuppressed = true;
      break;
    default:
      return -ErrorCode.BadContext;
  }
  return s.publishTimed(ev);
}
