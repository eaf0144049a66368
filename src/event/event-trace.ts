/**
 * Event Trace (CFE with the EVD packets that precede it) and trigger tracing (TRIG).
 *
 * A CFE with IP binds to the FUP that follows; without IP it binds to a FUP while
 * tracing (for the event types that can interrupt the flow) or stands alone with its
 * IP suppressed. EVDs add data (CR2, VMX exit reason and qualification) to the CFE
 * that follows them. Unknown CFE and EVD types are skipped: they add information but
 * are not needed to follow the flow.
 */
import { ErrorCode } from "../base/errors.js";
import { CfeType, EvdType, Flag, type Packet } from "../packet/types.js";
import { IGNORE } from "./branch.js";
import { Binding } from "./queue.js";
import type { DecoderState } from "./state.js";
import { EventFlag, EventType, type PtEvent } from "./types.js";

/** The event of each CFE type (indexed by type), -1 for types not known. */
const CFE_EVENT: readonly number[] = (() => {
  const table = new Array<number>(32).fill(-1);
  table[CfeType.Intr] = EventType.Interrupt;
  table[CfeType.Iret] = EventType.Iret;
  table[CfeType.Smi] = EventType.Smi;
  table[CfeType.Rsm] = EventType.Rsm;
  table[CfeType.Sipi] = EventType.Sipi;
  table[CfeType.Init] = EventType.Init;
  table[CfeType.VmEntry] = EventType.Vmentry;
  table[CfeType.VmExit] = EventType.Vmexit;
  table[CfeType.VmExitIntr] = EventType.Vmexit;
  table[CfeType.Shutdown] = EventType.Shutdown;
  table[CfeType.Uintr] = EventType.Uintr;
  table[CfeType.Uiret] = EventType.Uiret;
  table[CfeType.SwIntr] = EventType.Swintr;
  table[CfeType.Syscall] = EventType.Syscall;
  return table;
})();

/** CFE types that, without IP, bind to the next FUP while tracing. */
function bindsFupWhileTracing(cfe: number): boolean {
  switch (cfe) {
    case CfeType.Intr:
    case CfeType.Smi:
    case CfeType.Rsm:
    case CfeType.Sipi:
    case CfeType.Init:
    case CfeType.VmExit:
    case CfeType.VmExitIntr:
    case CfeType.Uintr:
    case CfeType.SwIntr:
      return true;
  }
  return false;
}

export function decodeCfe(s: DecoderState, pkt: Packet): number {
  const queue = s.queue;
  const cfe = pkt.a;
  const withIp = (pkt.flags & Flag.Ip) !== 0;
  // An EVD may have started this CFE's event.
  const started = queue.dequeue(Binding.Cfe);
  const type = CFE_EVENT[cfe] ?? -1;

  if (type < 0) {
    // EVD only starts events of known CFE types: a corrupt trace gets here too.
    if (started) return -ErrorCode.BadContext;
    if (withIp) {
      const ignore = queue.enqueue(Binding.FupBound);
      if (!ignore) return -ErrorCode.NoMem;
      ignore.type = IGNORE;
    }
    return 1;
  }

  let ev: PtEvent;
  if (cfe === CfeType.Intr || cfe === CfeType.VmExit || cfe === CfeType.VmExitIntr) {
    ev = started ?? s.newStandalone();
    if (!started) ev.type = type as EventType;
    if (ev.type !== type) return -ErrorCode.BadContext;
  } else {
    if (started) return -ErrorCode.BadContext;
    ev = s.newStandalone();
    ev.type = type as EventType;
  }

  switch (cfe) {
    case CfeType.VmExitIntr:
      ev.flags |= EventFlag.HasVector;
      ev.vector = pkt.b;
      break;
    case CfeType.Intr:
    case CfeType.Uintr:
    case CfeType.SwIntr:
      ev.vector = pkt.b;
      break;
    case CfeType.Sipi:
      ev.vector = pkt.b;
      if (withIp) return -ErrorCode.BadPacket;
      ev.ipSuppressed = true;
      break;
    case CfeType.Rsm:
      if (withIp) return -ErrorCode.BadPacket;
      ev.ipSuppressed = true;
      break;
  }

  if (withIp) return queue.requeue(ev, Binding.FupBound) ? 1 : -ErrorCode.NoMem;
  if (s.enabled && bindsFupWhileTracing(cfe)) return queue.requeue(ev, Binding.Fup) ? 1 : -ErrorCode.NoMem;

  ev.ipSuppressed = true;
  s.publishTimed(ev);
  return s.fetchPacket();
}

export function decodeEvd(s: DecoderState, pkt: Packet): number {
  const queue = s.queue;
  let ev = queue.peek(Binding.Cfe);
  switch (pkt.a) {
    case EvdType.Cr2:
      if (ev) return -ErrorCode.BadContext;
      ev = queue.enqueue(Binding.Cfe);
      if (!ev) return -ErrorCode.NoMem;
      ev.type = EventType.Interrupt;
      ev.flags = EventFlag.HasCr2;
      ev.payloadHi = pkt.hi;
      ev.payloadLo = pkt.lo;
      return 1;
    case EvdType.VmxQualification:
    case EvdType.VmxReason: {
      if (!ev) {
        ev = queue.enqueue(Binding.Cfe);
        if (!ev) return -ErrorCode.NoMem;
        ev.type = EventType.Vmexit;
      }
      if (ev.type !== EventType.Vmexit) return -ErrorCode.BadContext;
      const qualification = pkt.a === EvdType.VmxQualification;
      const flag = qualification ? EventFlag.HasVmxq : EventFlag.HasVmxr;
      if (ev.flags & flag) return -ErrorCode.BadContext;
      ev.flags |= flag;
      if (qualification) {
        ev.payload2Hi = pkt.hi;
        ev.payload2Lo = pkt.lo;
      } else {
        ev.payloadHi = pkt.hi;
        ev.payloadLo = pkt.lo;
      }
      return 1;
    }
  }
  return 1;
}

/**
 * TRIG: with IP, the FUP that follows is the anchor instruction (and the count must
 * be valid and zero); without, the flow decoder counts `icnt` instructions from the
 * last anchor, or the IP is unknown when the count is not valid.
 */
export function decodeTrig(s: DecoderState, pkt: Packet): number {
  const icntValid = (pkt.flags & Flag.Icntv) !== 0;
  const mult = pkt.flags & Flag.Mult ? EventFlag.Mult : 0;
  if (pkt.flags & Flag.Ip) {
    if (!icntValid || pkt.b !== 0) return -ErrorCode.BadPacket;
    const ev = s.queue.enqueue(Binding.FupBound);
    if (!ev) return -ErrorCode.NoMem;
    ev.type = EventType.Trig;
    ev.trbv = pkt.a;
    ev.flags = mult;
    return 1;
  }
  const ev = s.newStandalone();
  ev.type = EventType.Trig;
  ev.trbv = pkt.a;
  ev.flags = mult;
  if (icntValid) {
    // With tracing disabled the IP is given, so no count is expected.
    if (pkt.b !== 0 && !s.enabled) {
      s.event = ev;
      return -ErrorCode.BadPacket;
    }
    ev.icnt = pkt.b;
  } else {
    ev.ipSuppressed = true;
  }
  s.publishTimed(ev);
  return s.fetchPacket();
}
