/** @deprecated The C-integer parser lives in the base layer: import from `../base/c-int.js`. */
export { parseCInt, parseCUint } from "../base/c-int.js";
