/**
 * Packets that change the execution context: MODE.Exec (execution mode and IF),
 * MODE.TSX, PIP (CR3) and VMCS. Inside a FUP...TIP pair (an asynchronous branch)
 * they take effect at the branch target; alone they take effect where the flow
 * decoder finds the instruction that changed the context.
 */
import { ErrorCode } from "../base/errors.js";
import { Flag, type Packet } from "../packet/types.js";
import { IGNORE } from "./branch.js";
import { tsxFlags } from "./psb.js";
import { Binding } from "./queue.js";
import type { DecoderState } from "./state.js";
import { EventFlag, EventType, execMode } from "./types.js";

/**
 * MODE.Exec binds to the next TIP-family packet (or FUP-bound events' FUP). It
 * becomes an ExecMode event when CS.L/CS.D changed and an Iflags event when IF did
 * (if those are enabled); when nothing changed it still binds, through an event
 * that is dropped there.
 */
export function decodeModeExec(s: DecoderState, pkt: Packet): number {
  const iflag = (pkt.flags & Flag.If) !== 0;
  const csd = (pkt.flags & Flag.CsD) !== 0;
  const csl = (pkt.flags & Flag.CsL) !== 0;
  const queue = s.queue;
  const known = s.modeExecValid;
  let events = 0;

  if (!known || s.csl !== csl || s.csd !== csd) {
    const ev = queue.enqueue(Binding.Tip | Binding.FupBound);
    if (!ev) return -ErrorCode.NoMem;
    ev.type = EventType.ExecMode;
    ev.mode = execMode(csl, csd);
    s.csl = csl;
    s.csd = csd;
    events += 1;
  }
  if (s.enableIflags && (!known || s.iflag !== iflag)) {
    const ev = queue.enqueue(Binding.Tip | Binding.FupBound);
    if (!ev) return -ErrorCode.NoMem;
    ev.type = EventType.Iflags;
    if (iflag) ev.flags = EventFlag.Iflag;
    s.iflag = iflag;
    events += 1;
  }
  if (events === 0) {
    const ev = queue.enqueue(Binding.Tip | Binding.FupBound);
    if (!ev) return -ErrorCode.NoMem;
    ev.type = IGNORE;
  }
  s.modeExecValid = true;
  return 1;
}

/**
 * MODE.TSX binds to a FUP while tracing (an abort's FUP is also the source of the
 * asynchronous branch to the abort handler); with tracing disabled it stands alone.
 */
export function decodeModeTsx(s: DecoderState, pkt: Packet): number {
  if (s.enabled) {
    const ev = s.queue.enqueue(pkt.flags & Flag.Abort ? Binding.Fup : Binding.FupBound);
    if (!ev) return -ErrorCode.NoMem;
    ev.type = EventType.Tsx;
    ev.flags = tsxFlags(pkt.flags);
    return 1;
  }
  const ev = s.newStandalone();
  ev.type = EventType.Tsx;
  ev.flags = tsxFlags(pkt.flags);
  ev.ipSuppressed = true;
  s.publishTimed(ev);
  return s.fetchPacket();
}

/** PIP: part of an asynchronous branch (AsyncPaging at its TIP) or standalone Paging. */
export function decodePip(s: DecoderState, pkt: Packet): number {
  const nonRoot = pkt.flags & Flag.Nr ? EventFlag.NonRoot : 0;
  if (s.queue.find(Binding.Tip, EventType.AsyncBranch)) {
    const ev = s.queue.enqueue(Binding.Tip);
    if (!ev) return -ErrorCode.NoMem;
    ev.type = EventType.AsyncPaging;
    ev.payloadHi = pkt.hi;
    ev.payloadLo = pkt.lo;
    ev.flags = nonRoot;
    return 1;
  }
  const ev = s.newStandalone();
  ev.type = EventType.Paging;
  ev.payloadHi = pkt.hi;
  ev.payloadLo = pkt.lo;
  ev.flags = nonRoot;
  s.publishTimed(ev);
  return s.fetchPacket();
}

/**
 * VMCS: like PIP, and ordered before a PIP of the same asynchronous branch. A
 * standalone VMCS binds to a VMPTRLD, VMLAUNCH or VMRESUME the flow decoder finds.
 */
export function decodeVmcs(s: DecoderState, pkt: Packet): number {
  const queue = s.queue;
  const paging = queue.find(Binding.Tip, EventType.AsyncPaging);
  if (paging) {
    // Take over the paging event's place and queue the paging event after it.
    const moved = queue.enqueue(Binding.Tip);
    if (!moved) return -ErrorCode.NoMem;
    moved.copyFrom(paging);
    paging.type = EventType.AsyncVmcs;
    paging.payloadHi = pkt.hi;
    paging.payloadLo = pkt.lo;
    paging.flags = 0;
    return 1;
  }
  if (queue.find(Binding.Tip, EventType.AsyncBranch)) {
    const ev = queue.enqueue(Binding.Tip);
    if (!ev) return -ErrorCode.NoMem;
    ev.type = EventType.AsyncVmcs;
    ev.payloadHi = pkt.hi;
    ev.payloadLo = pkt.lo;
    return 1;
  }
  const ev = s.newStandalone();
  ev.type = EventType.Vmcs;
  ev.payloadHi = pkt.hi;
  ev.payloadLo = pkt.lo;
  s.publishTimed(ev);
  return s.fetchPacket();
}
