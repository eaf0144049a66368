/** Number parsing and printing for libipt-compatible options and output. */
import { parseCUint } from "../cpu/index.js";

/** Like {@link parseCUint} but limited to `max`; undefined if malformed, "big" if too large. */
export function parseCUintMax(text: string, max: bigint): bigint | "big" | undefined {
  const v = parseCUint(text);
  if (v === undefined) return undefined;
  return v > max ? "big" : v;
}

/** Lower-case hex, zero-padded to `width` digits, of a 64-bit value given as halves. */
export function hex64(hi: number, lo: number, width = 16): string {
  const s = hi === 0 ? lo.toString(16) : hi.toString(16) + lo.toString(16).padStart(8, "0");
  return s.padStart(width, "0");
}
