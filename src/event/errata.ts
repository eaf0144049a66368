/**
 * Overflow errata (selected by `config.errata`), each deciding from the packets after
 * an OVF whether the usual rule (a FUP follows if and only if tracing is enabled) was
 * broken, and where to resume if so:
 *
 * - SKD010: the FUP (or TIP.PGE) after an OVF may be missing although tracing resumed.
 * - APL11: an OVF may be followed by a spurious TIP.PGD.
 * - APL12: an OVF may be followed by a FUP although tracing resumed disabled.
 *
 * Each returns 0 when it published the Overflow event and moved the decoder, a
 * positive number when the erratum does not apply (or cannot be worked around, in
 * which case normal decoding diagnoses the trace), or -error. Timing packets skipped
 * on the way keep the clock up to date.
 */
import { ErrorCode } from "../base/errors.js";
import { Flag, type Packet, PacketType } from "../packet/types.js";
import type { Clock } from "./clock.js";
import { recoverAtIp, recoverDisabled, standaloneOverflow } from "./overflow.js";
import { findHeaderFup, tsxFlags } from "./psb.js";
import { Binding } from "./queue.js";
import type { DecoderState } from "./state.js";
import { EventType } from "./types.js";

/**
 * Apply a timing packet to `clock` (`end`: the offset after it): 0, -error, or 1 when
 * `pkt` is no timing packet.
 */
function applyTiming(clock: Clock, pkt: Packet, end: number): number {
  const err = timingPacket(clock, pkt, end);
  clock.prevType = pkt.type;
  return err;
}

function timingPacket(clock: Clock, pkt: Packet, end: number): number {
  switch (pkt.type) {
    case PacketType.Tsc:
      return clock.tsc(pkt);
    case PacketType.Cbr:
      return clock.cbr(pkt);
    case PacketType.Tma:
      return clock.tma(pkt);
    case PacketType.Mtc:
      return clock.mtc(pkt, end);
    case PacketType.Cyc:
      return clock.cyc(pkt);
  }
  return 1;
}

/**
 * SKD010: after an OVF without FUP, look for evidence that tracing is in fact
 * enabled and resume there: at a TIP's or later FUP's IP, at the FUP of the next
 * PSB+, or disabled after a TIP.PGD. A MODE.TSX seen on the way is kept for the FUP.
 */
export function handleSkd010(s: DecoderState): number {
  const scan = s.scan;
  const pkt = s.scanPacket;
  const clock = s.scanClock;
  scan.copyFrom(s.cursor);
  clock.copyFrom(s.clock);
  let tsxFound = false;
  let tsxPacketFlags = 0;

  for (;;) {
    const size = scan.next(pkt);
    // Running out of trace: assume the trace is correct.
    if (size < 0) return size === -ErrorCode.Eos ? 1 : size;
    switch (pkt.type) {
      case PacketType.TipPge:
        return 1;
      case PacketType.TipPgd: {
        recoverDisabled(s, scan, pkt, clock);
        return s.fetchPacket();
      }
      case PacketType.Tnt8:
      case PacketType.Tnt64:
        // The erratum applies, but we could not tell how many TNT bits to skip.
        return 1;
      case PacketType.Pip:
      case PacketType.Vmcs:
      case PacketType.ModeExec:
        // Changes lost like the others in the overflow.
        break;
      case PacketType.ModeTsx:
        // A second MODE.TSX means tracing is disabled; a first may bind to a FUP.
        if (tsxFound) return 1;
        tsxFound = true;
        tsxPacketFlags = pkt.flags;
        break;
      case PacketType.Fup: {
        if (tsxFound) {
          const ev = s.queue.enqueue(Binding.FupBound);
          if (!ev) return -ErrorCode.NoMem;
          ev.type = EventType.Tsx;
          ev.flags = tsxFlags(tsxPacketFlags);
        }
        return recoverAtIp(s, scan, pkt, pkt, clock);
      }
      case PacketType.Tip: {
        const err = recoverAtIp(s, scan, pkt, pkt, clock);
        if (err < 0) return err;
        return s.fetchPacket();
      }
      case PacketType.Psb: {
        // Tracing is enabled if and only if the PSB+ has a FUP.
        const fup = s.scanPacket2;
        const found = findHeaderFup(scan, s.scan2, fup);
        if (found < 0) return found === -ErrorCode.Eos ? 1 : found;
        if (found === 0) return 1;
        return recoverAtIp(s, scan, pkt, fup, clock);
      }
      case PacketType.PsbEnd:
        return -ErrorCode.BadContext;
      case PacketType.Ovf:
      case PacketType.Stop:
        return 1;
      case PacketType.Pad:
      case PacketType.Mnt:
      case PacketType.Pwre:
      case PacketType.Pwrx:
      case PacketType.Evd:
      case PacketType.Trig:
        break;
      case PacketType.Exstop:
      case PacketType.Ptw:
      case PacketType.Cfe:
        // Only standalone ones can be skipped; others would need their FUP handled.
        if (pkt.flags & Flag.Ip) return 1;
        break;
      case PacketType.Mwait:
        return 1;
      case PacketType.Tsc:
      case PacketType.Cbr:
      case PacketType.Tma:
      case PacketType.Mtc:
      case PacketType.Cyc: {
        const err = applyTiming(clock, pkt, scan.pos);
        if (err < 0) return err;
        break;
      }
      default:
        // Unknown and invalid packets cannot be skipped.
        return 1;
    }
  }
}

/**
 * APL11: after an OVF, a TIP.PGD (before anything showing tracing state) is
 * spurious: resume after it with tracing disabled.
 */
export function handleApl11(s: DecoderState): number {
  const scan = s.scan;
  const pkt = s.scanPacket;
  const clock = s.scanClock;
  scan.copyFrom(s.cursor);
  clock.copyFrom(s.clock);
  for (;;) {
    const size = scan.next(pkt);
    if (size < 0) return size;
    switch (pkt.type) {
      case PacketType.TipPgd:
        recoverDisabled(s, scan, pkt, clock);
        return s.fetchPacket();
      case PacketType.Pad:
      case PacketType.Mnt:
      case PacketType.Cfe:
      case PacketType.Evd:
      case PacketType.Trig:
        break;
      case PacketType.Tsc:
      case PacketType.Cbr:
      case PacketType.Tma:
      case PacketType.Mtc:
      case PacketType.Cyc: {
        const err = applyTiming(clock, pkt, scan.pos);
        if (err < 0) return err;
        break;
      }
      default:
        // Anything else: the erratum does not apply, or normal decoding diagnoses it.
        return 1;
    }
  }
}

/**
 * APL12: after an OVF and its FUP (`offset` bytes ahead), look for evidence that
 * tracing is disabled; if found, resume after the FUP with tracing disabled.
 */
export function handleApl12(s: DecoderState, offset: number): number {
  const scan = s.scan;
  const pkt = s.scanPacket;
  // Step over the packets up to the FUP again (a jump would lose their BIP context).
  scan.copyFrom(s.cursor);
  const fupEnd = scan.pos + offset;
  while (scan.pos < fupEnd) {
    if (scan.next(pkt) < 0) return -ErrorCode.Internal;
  }
  if (scan.pos !== fupEnd) return -ErrorCode.Internal;
  for (;;) {
    const size = scan.next(pkt);
    if (size < 0) return size === -ErrorCode.Eos ? 1 : size;
    switch (pkt.type) {
      case PacketType.Tnt8:
      case PacketType.Tnt64:
      case PacketType.Tip:
      case PacketType.TipPgd:
        // Only generated while tracing.
        return 1;
      case PacketType.Psb: {
        // Tracing is enabled if and only if the PSB+ has a FUP.
        const found = findHeaderFup(scan, s.scan2, s.scanPacket2);
        if (found !== 0) return found === -ErrorCode.Eos ? 1 : found;
        return recoverAtOffset(s, offset);
      }
      case PacketType.Stop:
      case PacketType.TipPge:
        return recoverAtOffset(s, offset);
      case PacketType.PsbEnd:
      case PacketType.Ovf:
        return 1;
      case PacketType.Pad:
      case PacketType.Fup:
      case PacketType.Tsc:
      case PacketType.Cbr:
      case PacketType.Tma:
      case PacketType.Mtc:
      case PacketType.Cyc:
      case PacketType.Exstop:
      case PacketType.Mwait:
      case PacketType.Pwre:
      case PacketType.Pwrx:
      case PacketType.Ptw:
      case PacketType.Mnt:
      case PacketType.Pip:
      case PacketType.Vmcs:
      case PacketType.ModeExec:
      case PacketType.ModeTsx:
      case PacketType.Cfe:
      case PacketType.Evd:
      case PacketType.Trig:
        break;
      default:
        return 1;
    }
  }
}

/**
 * Skip `offset` bytes of packets (up to and including the FUP), keeping time, and
 * publish an Overflow event with tracing disabled.
 */
function recoverAtOffset(s: DecoderState, offset: number): number {
  const pkt = s.packet;
  let left = offset;
  for (;;) {
    const size = s.cursor.next(pkt);
    if (size < 0) return size;
    if (left <= size) {
      if (left < size) return -ErrorCode.Internal;
      break;
    }
    left -= size;
    let err = applyTiming(s.clock, pkt, s.cursor.pos);
    if (err > 0) {
      switch (pkt.type) {
        // The search for the FUP stopped at packets that change state, or cannot be skipped.
        case PacketType.ModeExec:
        case PacketType.ModeTsx:
        case PacketType.Pip:
        case PacketType.Vmcs:
        case PacketType.Invalid:
        case PacketType.Bbp:
        case PacketType.Bip:
        case PacketType.Bep:
          return -ErrorCode.Internal;
      }
      err = 0;
    }
    if (err < 0) return err;
  }
  return standaloneOverflow(s);
}
