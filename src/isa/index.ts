/**
 * The x86 instruction layer: what Intel PT needs to know about one instruction
 * (length, change-of-flow class, direct target) and a decode cache for the loops that
 * walk code again and again (the trace-unit model and the flow decoder).
 *
 * ```ts
 * import { ExecMode, InsnCache, InsnClass, InsnInfo, decodeInsn } from "ptkit/isa";
 *
 * const insn = new InsnInfo();                       // one record, reused
 * const n = decodeInsn(code, offset, ipHi, ipLo, ExecMode.Bits64, insn);
 * if (n > 0 && insn.iclass === InsnClass.CondBranch) console.log(insn.target);
 *
 * const cache = new InsnCache({ maxEntries: 1 << 18 });
 * cache.lookup(asid, ipHi, ipLo, ExecMode.Bits64, code, offset, insn); // decodes once
 * ```
 *
 * Lengths and classes are libipt's (`ild.ts`: table-driven, so undefined opcodes have
 * them too, as in ptxed), refined where ptkit tells apart more far transfers and the
 * instructions Intel PT emits other packets for; decoding is plain TypeScript. Only
 * instruction text ({@link formatInsn}) uses iced-x86 (WebAssembly): `decode.ts` loads
 * it on the first format (Node) or in `await initIsa()` (browsers: call it before
 * formatting); {@link isIcedLoaded} tells whether it was. Note that the npm build of
 * iced-x86 is wasm-bindgen's Node target (CommonJS that reads its .wasm with `fs`):
 * the browser bundle (tools/browser/bundle.ts) gives it stand-ins for those.
 */
export { ANY_ASID, InsnCache, type InsnCacheOptions, type InsnCacheStats } from "./cache.js";
export {
  type AsmSyntax,
  decodeInsn,
  formatInsn,
  initIsa,
  isIcedLoaded,
  MAX_INSN_LENGTH,
  plainLength64,
} from "./decode.js";
export {
  COFI_TYPE,
  CofiType,
  cofiType,
  EXEC_MODE_BITS,
  ExecMode,
  execModeFromCs,
  INSN_CLASS_COUNT,
  INSN_CLASS_NAMES,
  InsnClass,
  InsnFlag,
  InsnInfo,
} from "./types.js";
