/**
 * Stepping over the packets whose header byte alone decides their type and size —
 * PAD, TNT-8, one-byte CYC, TIP/TIP.PGE/TIP.PGD/FUP, MTC, TSC: most packets of a
 * trace — for the loops that need no payloads (`ptkit stats`, `ptkit dump --quiet`).
 *
 * Two table reads a packet instead of a decode. What a header byte gives is what
 * {@link decodePacket} gives for it: the tables are filled by asking it, so the
 * decode logic stays in decode.ts; the rules below only say which headers qualify.
 */
import * as decode from "./decode.js";
import * as types from "./types.js";

// Module copies of imported bindings (see decode.ts): folded in optimized code.
const { Opcode, decodePacket } = decode;
const { Packet } = types;

/** Whether the packet a header byte starts is decided by that byte (outside a BBP block). */
function decidedByHeader(opc: number): boolean {
  if (opc === Opcode.Ext) return false; // the next byte says which packet
  if ((opc & 1) === 0) return true; // PAD, TNT-8
  if ((opc & 3) === 3) return (opc & 4) === 0; // CYC without extension bytes
  const low = opc & 0x1f;
  if (low === Opcode.Tip || low === Opcode.TipPge || low === Opcode.TipPgd || low === Opcode.Fup) return true;
  return opc === Opcode.Mtc || opc === Opcode.Tsc;
}

/** Per header byte: the packet size it decides (0: none, or a reserved encoding), and its type. */
const HEADER_SIZE = new Uint8Array(256);
const HEADER_TYPE = new Uint8Array(256);
{
  const probe = new Uint8Array(16);
  const pkt = new Packet();
  for (let opc = 0; opc < 256; opc++) {
    if (!decidedByHeader(opc)) continue;
    probe[0] = opc;
    const size = decodePacket(probe, 0, probe.length, pkt, 0, 0);
    if (size <= 0) continue;
    HEADER_SIZE[opc] = size;
    HEADER_TYPE[opc] = pkt.type;
  }
}

/**
 * Step over the packets from `pos` that their header byte decides, counting them
 * and their bytes per type, up to the first packet that needs {@link decodePacket},
 * the first packet boundary at or after `limit`, or a packet `end` cuts off
 * (`limit <= end`: the bytes held). Only outside a BBP block, where BIP headers
 * look like TNT-8; these packets leave the block context at 0. Returns where it
 * stopped.
 */
export function skimPackets(
  buf: Uint8Array,
  pos: number,
  limit: number,
  end: number,
  counts: Float64Array,
  typeBytes: Float64Array,
): number {
  while (pos < limit) {
    const opc = buf[pos]!;
    const size = HEADER_SIZE[opc]!;
    if (size === 0 || pos + size > end) break;
    const type = HEADER_TYPE[opc]!;
    counts[type]!++;
    typeBytes[type]! += size;
    pos += size;
  }
  return pos;
}
