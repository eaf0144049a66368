export { parseCInt, parseCUint } from "./c-int.js";
export {
  type Diagnostic,
  diagnosticLine,
  diagnosticMessage,
  diagnosticText,
  FileDiagnostic,
} from "./diagnostic.js";
export { ErrorCode, errorMessage, PtError } from "./errors.js";
export { cmp64, type Halves, hex0x, hex64, splitBigInt, toBigInt } from "./halves.js";
export { add64, div64, lt64, mul64, mulHi32, shl64, shr64, sub64, U64, type U64Like } from "./u64.js";
