/**
 * Power events: MWAIT and EXSTOP (execution stopped; with IP, a FUP gives the
 * instruction), PWRE (C-state entry, published at the PWRX that ends it) and PWRX.
 */
import { ErrorCode } from "../base/errors.js";
import { Flag, type Packet } from "../packet/types.js";
import { Binding } from "./queue.js";
import type { DecoderState } from "./state.js";
import { EventFlag, EventType } from "./types.js";

/** MWAIT waits for the EXSTOP that says whether its IP comes from a FUP. */
export function decodeMwait(s: DecoderState, pkt: Packet): number {
  const ev = s.queue.enqueue(Binding.Exstop);
  if (!ev) return -ErrorCode.NoMem;
  ev.type = EventType.Mwait;
  ev.hints = pkt.a;
  ev.ext = pkt.b;
  return 1;
}

export function decodeExstop(s: DecoderState, pkt: Packet): number {
  const withIp = (pkt.flags & Flag.Ip) !== 0;
  const mwait = s.queue.dequeue(Binding.Exstop);
  if (mwait) {
    if (mwait.type !== EventType.Mwait) return -ErrorCode.Internal;
    if (!withIp) {
      // Both stand alone: publish the MWAIT now and see this EXSTOP again next time.
      mwait.ipSuppressed = true;
      s.event = mwait;
      s.eventTime(mwait);
      return 0;
    }
    // Both bind to the same FUP, MWAIT first.
    const ev = s.queue.enqueue(Binding.FupBound);
    if (!ev) return -ErrorCode.NoMem;
    ev.copyFrom(mwait);
  }
  if (withIp) {
    const ev = s.queue.enqueue(Binding.FupBound);
    if (!ev) return -ErrorCode.NoMem;
    ev.type = EventType.Exstop;
    return 1;
  }
  const ev = s.newStandalone();
  ev.type = EventType.Exstop;
  ev.ipSuppressed = true;
  s.publishTimed(ev);
  return s.fetchPacket();
}

/** PWRE is timed now and published when its PWRX arrives (or at an overflow). */
export function decodePwre(s: DecoderState, pkt: Packet): number {
  const ev = s.queue.enqueue(Binding.Pwrx);
  if (!ev) return -ErrorCode.NoMem;
  ev.type = EventType.Pwre;
  ev.state = pkt.a;
  ev.subState = pkt.b;
  if (pkt.flags & Flag.Hw) ev.flags = EventFlag.Hw;
  s.eventTime(ev);
  return 1;
}

/** PWRX publishes a pending PWRE first (seeing this PWRX again next time), then itself. */
export function decodePwrx(s: DecoderState, pkt: Packet): number {
  const pwre = s.queue.dequeue(Binding.Pwrx);
  if (pwre) {
    s.event = pwre;
    return pwre.type === EventType.Pwre ? 0 : -ErrorCode.Internal;
  }
  const ev = s.newStandalone();
  ev.type = EventType.Pwrx;
  ev.last = pkt.a;
  ev.deepest = pkt.b;
  ev.flags =
    (pkt.flags & Flag.WakeInt ? EventFlag.Interrupt : 0) |
    (pkt.flags & Flag.WakeStore ? EventFlag.Store : 0) |
    (pkt.flags & Flag.WakeHw ? EventFlag.Autonomous : 0);
  s.publishTimed(ev);
  return s.fetchPacket();
}
