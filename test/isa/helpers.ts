import { decodeInsn } from "../../src/isa/decode.js";
import { type ExecMode, InsnFlag, InsnInfo } from "../../src/isa/types.js";

/** "0f 84 10 00 00 00" → bytes. */
export function hex(text: string): Uint8Array {
  const parts = text.split(/\s+/).filter((p) => p.length > 0);
  return Uint8Array.from(parts.map((p) => Number.parseInt(p, 16)));
}

export interface Decoded {
  status: number;
  length: number;
  iclass: number;
  flags: number;
  /** The direct target, when the instruction has one. */
  target: bigint | undefined;
}

/** Decode `bytes` at `ip` (a BigInt, split into halves here) in `mode`. */
export function decode(mode: ExecMode, bytes: Uint8Array | string, ip = 0n, offset = 0): Decoded {
  const b = typeof bytes === "string" ? hex(bytes) : bytes;
  const out = new InsnInfo();
  const status = decodeInsn(
    b,
    offset,
    Number((ip >> 32n) & 0xffffffffn),
    Number(ip & 0xffffffffn),
    mode,
    out,
  );
  return {
    status,
    length: out.length,
    iclass: out.iclass,
    flags: out.flags,
    target: out.flags & InsnFlag.Target ? out.target : undefined,
  };
}

export const U64 = (1n << 64n) - 1n;
