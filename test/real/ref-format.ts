/**
 * Helpers for comparing ptkit's packet decoder with reference dumps of real captures:
 * a ptdump-like decode loop, and the two text forms the references use — the libipt
 * 2.0.5 dumper (`*.ptref-dump.txt.gz`) and `perf report -D` (`*.perf-report-D.packets.txt.gz`).
 * Every field printed comes from the decoded {@link Packet}, never from the raw bytes.
 */
import {
  ErrorCode,
  Flag,
  PACKET_NAMES,
  Packet,
  PacketDecoder,
  PacketType,
  toBigInt,
} from "../../src/packet/index.js";

export interface Decoded {
  offset: number;
  pkt: Packet;
}

export interface DecodeResult {
  packets: Decoded[];
  /** Decode errors other than the end of the buffer. */
  errors: number;
  /** Successful syncs after an error. */
  resyncs: number;
}

/**
 * Decode like the reference dumper: sync forward to the first PSB, then decode packet
 * after packet until the end of the buffer; after an error, count it and sync forward.
 */
export function decodeAll(buf: Uint8Array): DecodeResult {
  const dec = new PacketDecoder(buf);
  const packets: Decoded[] = [];
  let errors = 0;
  let resyncs = 0;
  let status = dec.syncForward();
  while (status >= 0) {
    const offset = dec.pos;
    const pkt = new Packet();
    const size = dec.next(pkt);
    if (size > 0) {
      packets.push({ offset, pkt });
      continue;
    }
    if (size === -ErrorCode.Eos) break;
    errors++;
    status = dec.syncForward();
    if (status >= 0) resyncs++;
  }
  return { packets, errors, resyncs };
}

/** The 64-bit payload (lo/hi) in lower-case hex, exact. */
function hex64(pkt: Packet): string {
  return toBigInt(pkt.hi, pkt.lo).toString(16);
}

const bit = (pkt: Packet, flag: number): number => (pkt.flags & flag ? 1 : 0);

/** The libipt packet name: both MODE leaves are one type `mode` there. */
export function ptrefName(pkt: Packet): string {
  return pkt.type === PacketType.ModeExec || pkt.type === PacketType.ModeTsx
    ? "mode"
    : PACKET_NAMES[pkt.type]!;
}

/** A packet as the libipt dumper prints it: `offset size name payload…` (raw payloads, not reconstructed). */
export function ptrefLine({ offset, pkt }: Decoded): string {
  const head = `${offset.toString(16).padStart(8, "0")} ${pkt.size} ${ptrefName(pkt)}`;
  switch (pkt.type) {
    case PacketType.Fup:
    case PacketType.Tip:
    case PacketType.TipPge:
    case PacketType.TipPgd:
      return `${head} ipc=${pkt.a} ip=${hex64(pkt)}`;
    case PacketType.Tnt8:
    case PacketType.Tnt64:
      return `${head} n=${pkt.a} bits=${hex64(pkt)}`;
    case PacketType.ModeExec:
      // libipt 2.0.5's pt_packet_mode_exec has csl and csd only (no IF).
      return `${head} leaf=0 bits=${bit(pkt, Flag.CsL) | (bit(pkt, Flag.CsD) << 1)}`;
    case PacketType.ModeTsx:
      return `${head} leaf=32 bits=${bit(pkt, Flag.InTx) | (bit(pkt, Flag.Abort) << 1)}`;
    case PacketType.Pip:
      return `${head} cr3=${hex64(pkt)} nr=${bit(pkt, Flag.Nr)}`;
    case PacketType.Tsc:
      return `${head} tsc=${hex64(pkt)}`;
    case PacketType.Cbr:
      return `${head} ratio=${pkt.a}`;
    case PacketType.Tma:
      return `${head} ctc=${pkt.a.toString(16)} fc=${pkt.b.toString(16)}`;
    case PacketType.Mtc:
      return `${head} ctc=${pkt.a.toString(16)}`;
    case PacketType.Cyc:
      return `${head} value=${hex64(pkt)}`;
  }
  return head;
}

/** A packet's description as `perf report -D` prints it (intel_pt_pkt_desc). */
export function perfDesc(pkt: Packet): string {
  const name = PACKET_NAMES[pkt.type]!.toUpperCase();
  switch (pkt.type) {
    case PacketType.Tnt8:
    case PacketType.Tnt64: {
      // Oldest branch (bit a-1) first.
      const bits = toBigInt(pkt.hi, pkt.lo);
      let s = "";
      for (let i = pkt.a - 1; i >= 0; i--) s += (bits >> BigInt(i)) & 1n ? "T" : "N";
      return `TNT ${s} (${pkt.a})`;
    }
    case PacketType.Fup:
    case PacketType.Tip:
    case PacketType.TipPge:
    case PacketType.TipPgd:
      return pkt.a === 0 ? `${name} no ip` : `${name} 0x${hex64(pkt)}`;
    case PacketType.ModeExec:
      return `MODE.Exec IF:${bit(pkt, Flag.If)} ${pkt.flags & Flag.CsL ? 64 : pkt.flags & Flag.CsD ? 32 : 16}`;
    case PacketType.ModeTsx:
      return `MODE.TSX TXAbort:${bit(pkt, Flag.Abort)} InTX:${bit(pkt, Flag.InTx)}`;
    case PacketType.Pip:
      // perf prints the raw payload without NR, i.e. CR3 >> 5.
      return `PIP 0x${(toBigInt(pkt.hi, pkt.lo) >> 5n).toString(16)} (NR=${bit(pkt, Flag.Nr)})`;
    case PacketType.Tma:
      return `TMA CTC 0x${pkt.a.toString(16)} FC 0x${pkt.b.toString(16)}`;
    case PacketType.Cbr:
    case PacketType.Mtc:
      return `${name} 0x${pkt.a.toString(16)}`;
    case PacketType.Tsc:
    case PacketType.Cyc:
      return `${name} 0x${hex64(pkt)}`;
  }
  return name;
}

/**
 * ptkit's packets as `perf report -D` lists them (`offset size desc`), for packets in
 * `[0, end)`. perf's intel_pt_get_packet() folds the PAD bytes that follow a packet into it
 * while the packet is shorter than 8 bytes, so runs of PADs become 8-byte (or shorter) chunks.
 */
export function perfLines(packets: readonly Decoded[], end: number): string[] {
  const lines: string[] = [];
  for (let i = 0; i < packets.length && packets[i]!.offset < end; i++) {
    const { offset, pkt } = packets[i]!;
    let size = pkt.size;
    while (size < 8 && packets[i + 1]?.pkt.type === PacketType.Pad && offset + size < end) {
      size++;
      i++;
    }
    lines.push(`${offset.toString(16).padStart(8, "0")} ${size} ${perfDesc(pkt)}`);
  }
  return lines;
}

/** One PERF_RECORD_AUXTRACE buffer of a `perf report -D` dump. */
export interface PerfBlock {
  idx: number;
  /** The AUX bytes perf printed, concatenated. */
  bytes: Uint8Array;
  /** Entries in the form of {@link perfLines}. */
  lines: { offset: number; size: number; desc: string }[];
}

const PERF_RECORD = /PERF_RECORD_AUXTRACE .* idx: (\d+) /;
/** `.  %08x: ` then ` %02x` per byte, padded to 16 bytes, then ` desc`. */
const PERF_PACKET = /^\. {2}([0-9a-f]{8}): ((?: [0-9a-f]{2})+) +(.*)$/;

export function parsePerfDump(text: string): PerfBlock[] {
  const blocks: { idx: number; hex: string[]; lines: PerfBlock["lines"] }[] = [];
  for (const line of text.split("\n")) {
    const rec = PERF_RECORD.exec(line);
    if (rec) blocks.push({ idx: Number(rec[1]), hex: [], lines: [] });
    const m = PERF_PACKET.exec(line);
    if (!m) continue;
    const block = blocks.at(-1);
    if (!block) throw new Error(`packet line before any AUXTRACE record: ${line}`);
    const bytes = m[2]!.trim().split(" ");
    block.hex.push(...bytes);
    block.lines.push({ offset: Number.parseInt(m[1]!, 16), size: bytes.length, desc: m[3]! });
  }
  return blocks.map((b) => ({ idx: b.idx, bytes: Buffer.from(b.hex.join(""), "hex"), lines: b.lines }));
}

/** The first index where two line lists differ, or -1. */
export function firstDifference(a: readonly string[], b: readonly string[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}
