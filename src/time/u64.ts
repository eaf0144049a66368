/** @deprecated 64-bit arithmetic lives in the base layer: import from `../base/u64.js`. */
export { add64, div64, lt64, mul64, mulHi32, shl64, shr64, sub64, U64, type U64Like } from "../base/u64.js";
