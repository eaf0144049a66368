/** Number parsing and printing for libipt-compatible options and output. */
import { parseCUint } from "../cpu/index.js";

/** Like {@link parseCUint} but limited to `max`; undefined if malformed, "big" if too large. */
export function parseCUintMax(text: string, max: bigint): bigint | "big" | undefined {
  const v = parseCUint(text);
  if (v === undefined) return undefined;
  return v > max ? "big" : v;
}
