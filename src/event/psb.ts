/**
 * PSB+: the packets between PSB and PSBEND (or an OVF in its place) state the
 * current context rather than change it, in no defined order. They all bind to
 * PSBEND, where they are published as status updates carrying the IP and time of
 * the whole header; the first one says whether tracing is enabled.
 */
import { ErrorCode } from "../base/errors.js";
import { LastIp } from "../packet/last-ip.js";
import { Flag, Ipc, type Packet, PacketType } from "../packet/types.js";
import type { PacketCursor } from "./cursor.js";
import { ALL_BINDINGS, Binding } from "./queue.js";
import type { DecoderState } from "./state.js";
import { EventFlag, EventType, execMode, type PtEvent } from "./types.js";

/**
 * Decode a PSB+ header up to its PSBEND or OVF, which is left as the current packet.
 * Returns 1, or -error.
 */
export function decodePsb(s: DecoderState): number {
  // Partial events must not be carried across a PSB.
  if (s.queue.pending(ALL_BINDINGS)) return -ErrorCode.BadContext;

  s.ip.reset();
  s.enabled = false;

  // The enabled/disabled status goes first; which one it is shows at the end.
  const status = s.queue.enqueue(Binding.PsbEnd);
  if (!status) return -ErrorCode.NoMem;
  status.statusUpdate = true;
  status.psbOffset = s.cursor.syncOffset;

  const pkt = s.packet;
  for (;;) {
    s.fetchPacket();
    let err = 0;
    switch (pkt.type) {
      case PacketType.Fup:
        err = headerFup(s, pkt, status);
        break;
      case PacketType.ModeExec:
        err = headerModeExec(s, pkt);
        break;
      case PacketType.ModeTsx:
        err = headerStatus(s, EventType.Tsx, pkt);
        break;
      case PacketType.Pip:
        err = headerStatus(s, EventType.AsyncPaging, pkt);
        break;
      case PacketType.Vmcs:
        err = headerStatus(s, EventType.AsyncVmcs, pkt);
        break;
      case PacketType.Mnt:
        err = headerStatus(s, EventType.Mnt, pkt);
        break;
      case PacketType.Cbr:
        err = s.clock.headerCbr(pkt);
        if (err === 0) err = headerStatus(s, EventType.Cbr, pkt);
        break;
      case PacketType.Tsc:
        err = s.clock.headerTsc(pkt);
        break;
      case PacketType.Tma:
        err = s.clock.tma(pkt);
        break;
      case PacketType.Mtc:
        err = s.clock.mtc(pkt, s.cursor.pos);
        break;
      case PacketType.Cyc:
        err = s.clock.headerCyc(pkt);
        break;
      case PacketType.PsbEnd:
        if (s.enabled) status.type = EventType.Enabled;
        else {
          status.type = EventType.Disabled;
          status.ipSuppressed = true;
        }
        return 1;
      case PacketType.Ovf:
        // Without a FUP, drop the status: the overflow will say what happened.
        if (s.enabled) status.type = EventType.Enabled;
        else if (s.queue.dequeue(Binding.PsbEnd) !== status) return -ErrorCode.Internal;
        return 1;
      case PacketType.Bad:
      case PacketType.Invalid:
        err = s.status;
        break;
      default:
        return -ErrorCode.BadContext;
    }
    if (err < 0) return err;
  }
}

/** PSBEND (or the OVF ending PSB+): publish the next status update, or return 1. */
export function decodePsbEnd(s: DecoderState): number {
  const ev = s.queue.dequeue(Binding.PsbEnd);
  if (!ev) return 1;
  switch (ev.type) {
    case EventType.Enabled:
    case EventType.ExecMode:
    case EventType.Iflags:
    case EventType.Tsx:
    case EventType.AsyncPaging:
    case EventType.AsyncVmcs:
      s.eventIp(ev);
      break;
    case EventType.Disabled:
    case EventType.Cbr:
    case EventType.Mnt:
      break;
    default:
      return -ErrorCode.BadContext;
  }
  return s.publishTimed(ev);
}

/** The IP of a PSB+'s FUP that BDM70 sets aside (see headerFup). */
const SET_ASIDE = new LastIp();

/** FUP in PSB+: tracing is enabled at its IP, unless its IP is suppressed (or BDM70). */
function headerFup(s: DecoderState, pkt: Packet, status: PtEvent): number {
  let enabled = pkt.a !== Ipc.Suppressed;
  if (s.config.errata.bdm70) {
    const applies = bdm70Applies(s);
    if (applies < 0) return applies;
    if (applies > 0) {
      enabled = false;
      // Set aside, but said (PtEvent.from): the last IP was reset at the PSB, so a
      // fresh one reads the FUP's IP as the decoder's would.
      SET_ASIDE.reset();
      const err = SET_ASIDE.update(pkt);
      if (err < 0) return err;
      status.fromHi = SET_ASIDE.hi;
      status.fromLo = SET_ASIDE.lo;
    }
  }
  s.enabled = enabled;
  return enabled ? s.ip.update(pkt) : 0;
}

/**
 * BDM70: a PSB+ may carry a FUP although tracing is disabled, when a TIP.PGE
 * follows. Look past the header (and packets that change nothing) for that TIP.PGE:
 * 1 when found, 0 when not, -error.
 */
function bdm70Applies(s: DecoderState): number {
  const scan = s.scan2;
  const pkt = s.scanPacket2;
  scan.copyFrom(s.cursor);
  for (;;) {
    const size = scan.next(pkt);
    if (size < 0) return size === -ErrorCode.Eos ? 0 : size;
    if (pkt.type === PacketType.TipPge) return 1;
    if (!bdm70Passes(pkt.type)) return 0;
  }
}

/** BDM70: packets that may stand between the PSB+ and the TIP.PGE that makes its FUP a disabled one. */
export function bdm70Passes(type: number): boolean {
  switch (type) {
    case PacketType.Pad:
    case PacketType.Tsc:
    case PacketType.Cbr:
    case PacketType.PsbEnd:
    case PacketType.Pip:
    case PacketType.ModeExec:
    case PacketType.ModeTsx:
    case PacketType.Vmcs:
    case PacketType.Tma:
    case PacketType.Mtc:
    case PacketType.Cyc:
    case PacketType.Mnt:
      return true;
    default:
      return false;
  }
}

/**
 * MODE.Exec in PSB+: initialises the mode state, or checks it against the state
 * already known (the IF bit only with iflags events, which see every IF change).
 */
function headerModeExec(s: DecoderState, pkt: Packet): number {
  const iflag = (pkt.flags & Flag.If) !== 0;
  const csd = (pkt.flags & Flag.CsD) !== 0;
  const csl = (pkt.flags & Flag.CsL) !== 0;
  if (s.modeExecValid) {
    if (s.enableIflags && s.iflag !== iflag) return -ErrorCode.BadStatusUpdate;
    if (s.csd !== csd || s.csl !== csl) return -ErrorCode.BadStatusUpdate;
  } else {
    s.modeExecValid = true;
    s.iflag = iflag;
    s.csd = csd;
    s.csl = csl;
  }
  const ev = s.queue.enqueue(Binding.PsbEnd);
  if (!ev) return -ErrorCode.NoMem;
  ev.statusUpdate = true;
  ev.type = EventType.ExecMode;
  ev.mode = execMode(csl, csd);
  if (s.enableIflags) {
    const flags = s.queue.enqueue(Binding.PsbEnd);
    if (!flags) return -ErrorCode.NoMem;
    flags.statusUpdate = true;
    flags.type = EventType.Iflags;
    if (iflag) flags.flags = EventFlag.Iflag;
  }
  return 0;
}

/** Queue a PSB+ packet's event for PSBEND. MNT is no status update (libipt's choice). */
function headerStatus(s: DecoderState, type: EventType, pkt: Packet): number {
  const ev = s.queue.enqueue(Binding.PsbEnd);
  if (!ev) return -ErrorCode.NoMem;
  ev.type = type;
  ev.statusUpdate = type !== EventType.Mnt;
  switch (type) {
    case EventType.Tsx:
      ev.flags = tsxFlags(pkt.flags);
      break;
    case EventType.AsyncPaging:
      ev.payloadHi = pkt.hi;
      ev.payloadLo = pkt.lo;
      if (pkt.flags & Flag.Nr) ev.flags = EventFlag.NonRoot;
      break;
    case EventType.AsyncVmcs:
    case EventType.Mnt:
      ev.payloadHi = pkt.hi;
      ev.payloadLo = pkt.lo;
      break;
    case EventType.Cbr:
      ev.ratio = pkt.a;
      break;
  }
  return 0;
}

/** The Tsx event flags for a MODE.TSX packet's flags. */
export function tsxFlags(packetFlags: number): number {
  return (
    (packetFlags & Flag.InTx ? EventFlag.Speculative : 0) | (packetFlags & Flag.Abort ? EventFlag.Aborted : 0)
  );
}

/**
 * Look through the PSB+ that `from` is in or at for a FUP: 1 with the FUP in `pkt`,
 * 0 when the header ends without one, -error (-Eos when the trace ends first).
 */
export function findHeaderFup(from: PacketCursor, scan: PacketCursor, pkt: Packet): number {
  scan.copyFrom(from);
  for (;;) {
    const size = scan.next(pkt);
    if (size < 0) return size;
    switch (pkt.type) {
      case PacketType.Fup:
        return 1;
      case PacketType.ModeExec:
      case PacketType.ModeTsx:
      case PacketType.Pip:
      case PacketType.Vmcs:
      case PacketType.Mnt:
      case PacketType.Tsc:
      case PacketType.Cbr:
      case PacketType.Tma:
      case PacketType.Mtc:
      case PacketType.Cyc:
      case PacketType.Pad:
      case PacketType.Invalid:
        break;
      case PacketType.PsbEnd:
      case PacketType.Ovf:
        return 0;
      default:
        return -ErrorCode.BadContext;
    }
  }
}
