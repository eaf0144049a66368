/**
 * Crystal-clock (CTC) helpers shared by the time tracker and the calibrator.
 * CTC values are unsigned 32-bit numbers: MTC payloads shifted left by MTCFreq.
 */
import * as errors from "../base/errors.js";
import type { U64 } from "../base/u64.js";
import * as u64 from "../base/u64.js";
import type { TimeParams } from "./config.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { ErrorCode } = errors;
const { div64, mulHi32 } = u64;

/** CTC bits an MTC packet carries (CTC[MTCFreq+7:MTCFreq]). */
export const MTC_CTC_BITS = 8;
/** CTC bits a TMA packet carries (CTC[15:0]). */
export const TMA_CTC_BITS = 16;
export const TMA_CTC_MASK = 0xffff;

/**
 * The distance from `last` to `ctc`, correcting at most one wrap of the CTC bits MTC
 * packets provide. Returns the distance (an unsigned 32-bit number) or -BadPacket when
 * `ctc` is still behind after one correction.
 */
export function ctcDelta(ctc: number, last: number, mtcFreq: number): number {
  if (ctc < last) {
    // Shift counts wrap modulo 32, as the x86 shift in libipt's C does.
    ctc = (ctc + ((1 << (mtcFreq + MTC_CTC_BITS)) >>> 0)) >>> 0;
    if (ctc < last) return -ErrorCode.BadPacket;
  }
  return ctc - last;
}

/**
 * out = delta * CPUID.15H:EBX / CPUID.15H:EAX, a CTC distance in fast-counter (TSC)
 * ticks. Exact: the product of two 32-bit numbers fits 64 bits and div64 is exact.
 * Returns 0, or -BadConfig when either CPUID word is 0.
 */
export function ctcToFc(out: U64, delta: number, params: TimeParams): number {
  const { eax, ebx } = params;
  if (eax === 0 || ebx === 0) return -ErrorCode.BadConfig;
  div64(out, mulHi32(delta, ebx), Math.imul(delta, ebx) >>> 0, 0, eax);
  return 0;
}
