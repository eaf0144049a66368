/** @deprecated 64-bit halves live in the base layer: import from `../base/halves.js`. */
export { type Halves, hex64, splitBigInt, toBigInt } from "../base/halves.js";
