/**
 * OVF: the trace unit dropped packets. Decoding restarts from scratch, keeping the
 * time. If the overflow resolved while tracing, a FUP follows (possibly after timing
 * packets) and gives the IP where tracing resumes; otherwise tracing was disabled and
 * a TIP.PGE will enable it later. The errata that break this rule (SKD010, APL11,
 * APL12) are handled in errata.ts.
 */
import { ErrorCode } from "../base/errors.js";
import { type Packet, PacketType } from "../packet/types.js";
import type { Clock } from "./clock.js";
import type { PacketCursor } from "./cursor.js";
import { handleApl11, handleApl12, handleSkd010 } from "./errata.js";
import { takesFupIp } from "./fup-ip.js";
import { decodePsbEnd } from "./psb.js";
import { Binding } from "./queue.js";
import type { DecoderState } from "./state.js";
import { EventType, type PtEvent } from "./types.js";

/** Events a disabled decoder still publishes (IP suppressed) before an overflow. */
const PENDING_AT_OVF = Binding.FupBound | Binding.Fup | Binding.Tip | Binding.Exstop | Binding.Pwrx;

export function decodeOvf(s: DecoderState): number {
  // An OVF ends PSB+ like PSBEND does: publish its status updates first.
  const psbend = decodePsbEnd(s);
  if (psbend <= 0) return psbend;

  // With tracing disabled, publish pending events (one per call); while tracing
  // they could not be placed and are dropped below.
  while (!s.enabled) {
    const ev = s.queue.dequeue(PENDING_AT_OVF);
    if (!ev) break;
    if (publishAtOvf(ev)) {
      s.event = ev;
      return 0;
    }
  }

  // Start over, keeping the time (and, if asked to, the calibration).
  s.reset(true);
  s.clock.overflow();

  const errata = s.config.errata;
  const offset = findOvfFup(s.cursor, s.scan, s.scanPacket);
  if (offset <= 0) {
    // The FUP may have been lost (SKD010), or a TIP.PGD added (APL11).
    if (errata.skd010) {
      const err = handleSkd010(s);
      if (err <= 0) return err;
    }
    if (errata.apl11 && offset === -ErrorCode.BadContext) {
      const err = handleApl11(s);
      if (err <= 0) return err;
    }
    // An overflow at the end of the trace stands alone.
    if (offset < 0 && offset !== -ErrorCode.Eos) return offset;
    return standaloneOverflow(s);
  }

  // The FUP may be spurious, with tracing disabled (APL12).
  if (errata.apl12) {
    const err = handleApl12(s, offset);
    if (err <= 0) return err;
  }

  const ev = s.queue.enqueue(Binding.FupBound);
  if (!ev) return -ErrorCode.NoMem;
  ev.type = EventType.Overflow;
  s.eventTime(ev);
  return 1;
}

/** Whether `ev` is published at an OVF; events bound to an IP lose it. */
function publishAtOvf(ev: PtEvent): boolean {
  switch (ev.type) {
    case EventType.Pwre:
    case EventType.Rsm:
    case EventType.Sipi:
      return true;
  }
  if (!takesFupIp(ev.type)) return false;
  ev.ipSuppressed = true;
  return true;
}

/** An Overflow event with the IP suppressed (tracing disabled), then the next packet. */
export function standaloneOverflow(s: DecoderState): number {
  const ev = s.newStandalone();
  ev.type = EventType.Overflow;
  ev.ipSuppressed = true;
  s.publishTimed(ev);
  return s.fetchPacket();
}

/**
 * Look for the FUP an OVF binds to, past packets that do not depend on tracing being
 * enabled: the distance from `from` to the end of the FUP, 0 when a packet shows that
 * tracing is disabled, -BadContext for a packet that needs tracing enabled, -error.
 */
function findOvfFup(from: PacketCursor, scan: PacketCursor, pkt: Packet): number {
  scan.copyFrom(from);
  for (;;) {
    const size = scan.next(pkt);
    if (size < 0) return size;
    switch (pkt.type) {
      case PacketType.Fup:
        return scan.pos - from.pos;
      case PacketType.Pad:
      case PacketType.Mnt:
      case PacketType.Cbr:
      case PacketType.Tsc:
      case PacketType.Tma:
      case PacketType.Mtc:
      case PacketType.Cyc:
      case PacketType.Invalid:
      case PacketType.Bbp:
      case PacketType.Bip:
      case PacketType.Bep:
        break;
      case PacketType.PsbEnd:
      case PacketType.Tip:
      case PacketType.TipPgd:
      case PacketType.Tnt8:
      case PacketType.Tnt64:
        return -ErrorCode.BadContext;
      default:
        return 0;
    }
  }
}

/**
 * Resume after an overflow at `ip` with tracing enabled, from the look-ahead position
 * `scan` (with `pkt` as the current packet and the time in `clock`). The Overflow
 * event keeps the time of the OVF.
 */
export function recoverAtIp(
  s: DecoderState,
  scan: PacketCursor,
  pkt: Packet,
  ip: Packet,
  clock: Clock,
): number {
  const err = s.ip.update(ip);
  if (err < 0) return err;
  const ev = s.newStandalone();
  ev.type = EventType.Overflow;
  s.eventTime(ev);
  adopt(s, scan, pkt, clock);
  s.enabled = true;
  s.eventIp(ev);
  s.event = ev;
  return 0;
}

/** Resume after an overflow with tracing disabled, like {@link recoverAtIp}. */
export function recoverDisabled(s: DecoderState, scan: PacketCursor, pkt: Packet, clock: Clock): number {
  const ev = s.newStandalone();
  ev.type = EventType.Overflow;
  ev.ipSuppressed = true;
  s.eventTime(ev);
  adopt(s, scan, pkt, clock);
  s.event = ev;
  return 0;
}

function adopt(s: DecoderState, scan: PacketCursor, pkt: Packet, clock: Clock): void {
  s.cursor.copyFrom(scan);
  s.packet.copyFrom(pkt);
  s.clock.copyFrom(clock);
}
