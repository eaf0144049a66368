/** Number parsing and printing for libipt-compatible options and output. */
import { parseCUint } from "../cpu/index.js";

/** Like {@link parseCUint} but limited to `max`; undefined if malformed, "big" if too large. */
export function parseCUintMax(text: string, max: bigint): bigint | "big" | undefined {
  const v = parseCUint(text);
  if (v === undefined) return undefined;
  return v > max ? "big" : v;
}

const SIZE_UNIT: Record<string, number> = { "": 1, K: 1 << 10, M: 1 << 20, G: 1 << 30 };

/** A size like 4096, 0x1000, 4K, 2M or 1G (binary units); undefined if malformed. */
export function parseSize(text: string): number | undefined {
  const m = /^(0x[0-9a-f]+|\d+)([KMG]?)$/i.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]) * SIZE_UNIT[m[2]!.toUpperCase()]!;
  return Number.isSafeInteger(n) ? n : undefined;
}
