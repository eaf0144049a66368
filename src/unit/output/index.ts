/**
 * Intel PT output to memory: single-range and ToPA output with the processor's MSR
 * updates, STOP, INT/PMI and operational errors ({@link OutputUnit}), a sparse
 * physical memory ({@link PhysMemory}), ToPA table helpers, and the reader that gives
 * the trace back in write order ({@link readOutput}).
 */
export { OutputError, type OutputErrorInfo } from "./errors.js";
export { PAGE_SIZE, PhysMemory } from "./memory.js";
export {
  type OutputPointers,
  type OutputSegment,
  type ReadOutputOptions,
  type ReadOutputResult,
  readOutput,
} from "./reader.js";
export {
  encodeTopaEntry,
  nextTopaIndex,
  readTopaEntry,
  resolveTopa,
  TOPA_END,
  TOPA_INT,
  TOPA_MAX_INDEX,
  TOPA_RESERVED_LO,
  TOPA_STOP,
  type TopaEntry,
  type TopaRegion,
  type TopaRules,
  topaRegionSize,
  topaRules,
  writeTopaTable,
} from "./topa.js";
export {
  type OutputMode,
  OutputUnit,
  type OutputUnitOptions,
  outputRegisters,
  type PmiEvent,
  type WriteResult,
} from "./unit.js";
