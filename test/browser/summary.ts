/**
 * One decode of a trace and its ELF through ptkit's public API, reduced to plain data:
 * the packets (a ptdump-like list), the instructions (their IPs) and the first and last
 * instructions' disassembly. The browser test runs this same function in Node and in
 * Chromium and compares the results.
 *
 * It takes the library as a parameter and imports types only, so its compiled
 * JavaScript has no imports and the page can load it beside the bundle unchanged.
 */
import type * as Ptkit from "../../tools/browser/ptkit.js";

export interface DecodeSummary {
  /** Packets decoded, and one "offset  name" line per packet (offsets in hex). */
  packets: number;
  packetLines: string[];
  /** Executed instructions, and FNV-1a over their IPs' 32-bit halves (hex). */
  insns: number;
  ipHash: string;
  /** "ip: disassembly" of the first and last instruction. */
  first: string;
  last: string;
  /** Decode errors as "offset: message". */
  errors: string[];
}

const FNV_PRIME = 16777619;

export function decodeSummary(lib: typeof Ptkit, trace: Uint8Array, elf: Uint8Array): DecodeSummary {
  const { flow, image, packet } = lib;
  const errors: string[] = [];

  const packetLines: string[] = [];
  const pd = new packet.PacketDecoder(trace);
  const pkt = new packet.Packet();
  let status = pd.syncForward();
  while (status >= 0) {
    const at = pd.offset;
    status = pd.next(pkt);
    if (status >= 0) {
      packetLines.push(`${at.toString(16).padStart(16, "0")}  ${packet.PACKET_NAMES[pkt.type]}`);
    } else if (status !== -packet.ErrorCode.Eos) {
      errors.push(`packet ${at.toString(16)}: ${packet.errorMessage(status)}`);
      status = pd.syncForward();
    }
  }

  const img = new image.Image("sample");
  if (img.addElf(image.parseElf(elf)) < 0) throw new Error("the ELF does not map");
  const dec = new flow.InsnDecoder(trace, { image: img });
  let insns = 0;
  let hash = 0x811c9dc5;
  let first = "";
  // The last instruction, kept to be disassembled at the end.
  const lastRaw = new Uint8Array(flow.MAX_RAW);
  let lastHi = 0;
  let lastLo = 0;
  let lastMode = 0;
  flow.drive(dec, new flow.Insn(), {
    record: (insn) => {
      if (insn.iclass === flow.FlowClass.Unknown) return;
      insns++;
      hash = Math.imul(hash ^ insn.ipHi, FNV_PRIME);
      hash = Math.imul(hash ^ insn.ipLo, FNV_PRIME);
      lastRaw.set(insn.raw);
      lastHi = insn.ipHi;
      lastLo = insn.ipLo;
      lastMode = insn.mode;
      if (first === "") first = disassemble(lib, lastRaw, lastHi, lastLo, lastMode);
    },
    error: (s, offset, sync) => {
      errors.push(
        sync ? `sync: ${packet.errorMessage(s)}` : `${offset.toString(16)}: ${packet.errorMessage(s)}`,
      );
      return !sync;
    },
  });
  return {
    packets: packetLines.length,
    packetLines,
    insns,
    ipHash: (hash >>> 0).toString(16),
    first,
    last: insns > 0 ? disassemble(lib, lastRaw, lastHi, lastLo, lastMode) : "",
    errors,
  };
}

/** "ip: instruction" (ip in hex, Intel syntax). */
function disassemble(lib: typeof Ptkit, raw: Uint8Array, ipHi: number, ipLo: number, mode: number): string {
  const ip = lib.packet.toBigInt(ipHi, ipLo).toString(16);
  return `${ip}: ${lib.isa.formatInsn(raw, 0, ipHi, ipLo, mode as Ptkit.isa.ExecMode)}`;
}
