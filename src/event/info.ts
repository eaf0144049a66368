/**
 * Packets that report rather than change the flow: CBR, MNT, TraceStop and PTWRITE
 * (which, with IP, binds to the FUP giving the PTWRITE instruction).
 */
import { ErrorCode } from "../base/errors.js";
import { Flag, type Packet } from "../packet/types.js";
import { Binding } from "./queue.js";
import type { DecoderState } from "./state.js";
import { EventType } from "./types.js";

export function decodeCbr(s: DecoderState, pkt: Packet): number {
  const err = s.clock.cbr(pkt);
  if (err < 0) return err;
  const ev = s.newStandalone();
  ev.type = EventType.Cbr;
  ev.ratio = pkt.a;
  s.publishTimed(ev);
  return s.fetchPacket();
}

export function decodeMnt(s: DecoderState, pkt: Packet): number {
  const ev = s.newStandalone();
  ev.type = EventType.Mnt;
  ev.payloadHi = pkt.hi;
  ev.payloadLo = pkt.lo;
  s.publishTimed(ev);
  return s.fetchPacket();
}

export function decodeStop(s: DecoderState): number {
  const ev = s.newStandalone();
  ev.type = EventType.Stop;
  s.publishTimed(ev);
  return s.fetchPacket();
}

export function decodePtw(s: DecoderState, pkt: Packet): number {
  if (pkt.flags & Flag.Ip) {
    const ev = s.queue.enqueue(Binding.FupBound);
    if (!ev) return -ErrorCode.NoMem;
    ev.type = EventType.Ptwrite;
    ev.size = pkt.a;
    ev.payloadHi = pkt.hi;
    ev.payloadLo = pkt.lo;
    return 1;
  }
  const ev = s.newStandalone();
  ev.type = EventType.Ptwrite;
  ev.size = pkt.a;
  ev.payloadHi = pkt.hi;
  ev.payloadLo = pkt.lo;
  ev.ipSuppressed = true;
  s.publishTimed(ev);
  return s.fetchPacket();
}
