/** Number parsing and printing for libipt-compatible options and output. */
import { parseCUint } from "../base/c-int.js";

/** Like {@link parseCUint} but limited to `max`; undefined if malformed, "big" if too large. */
export function parseCUintMax(text: string, max: bigint): bigint | "big" | undefined {
  const v = parseCUint(text);
  if (v === undefined) return undefined;
  return v > max ? "big" : v;
}

/**
 * An option's number argument, at most `max`: the number, or ptdump's and ptxed's
 * message for a missing, malformed or too large one.
 */
export function numberArg(option: string, value: string | undefined, max: bigint): bigint | string {
  if (value === undefined || value === "" || value.startsWith("--")) return `${option}: missing argument.`;
  const v = parseCUintMax(value, max);
  if (v === undefined) return `${option}: bad argument: ${value}.`;
  if (v === "big") return `${option}: value too big: ${value}.`;
  return v;
}

/** The decoder's numbers ptdump and ptxed both take: the option, its field, its largest value. */
export const DECODER_NUMBERS: Record<
  string,
  { key: "mtcFreq" | "nomFreq" | "cpuid15Eax" | "cpuid15Ebx"; max: bigint }
> = {
  "--mtc-freq": { key: "mtcFreq", max: 0xffn },
  "--nom-freq": { key: "nomFreq", max: 0xffn },
  "--cpuid-0x15.eax": { key: "cpuid15Eax", max: 0xffffffffn },
  "--cpuid-0x15.ebx": { key: "cpuid15Ebx", max: 0xffffffffn },
};

const SIZE_UNIT: Record<string, number> = { "": 1, K: 1 << 10, M: 1 << 20, G: 1 << 30 };

/** A size like 4096, 0x1000, 4K, 2M or 1G (binary units); undefined if malformed. */
export function parseSize(text: string): number | undefined {
  const m = /^(0x[0-9a-f]+|\d+)([KMG]?)$/i.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]) * SIZE_UNIT[m[2]!.toUpperCase()]!;
  return Number.isSafeInteger(n) ? n : undefined;
}
