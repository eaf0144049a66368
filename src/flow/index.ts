/**
 * Flow reconstruction: Intel PT trace plus the memory image in, the executed
 * instructions out, with the events in between (libipt's block and instruction
 * decoders over its event decoder).
 *
 * {@link BlockDecoder} reports blocks of straight-line instructions and is the fast
 * one; {@link InsnDecoder} reports one instruction at a time on top of it. Both take
 * the trace, an {@link Image} (or an ImageSet per address space) and the
 * {@link DecoderConfig}; both return libipt's status flags or -ErrorCode from every
 * call and fill caller-owned records ({@link Block}, {@link Insn}, PtEvent).
 */
export { AddrCfg, AddrFilterCheck } from "./addr-filter.js";
export { BlockDecoder, BlockTally } from "./block-decoder.js";
export { SameCodeCaches, type SectionCaches } from "./code-reader.js";
export {
  COLD_WORDS,
  DecisionGraph,
  endClass,
  endSize,
  GRAPH_FORMAT,
  type GraphMemory,
  type GraphState,
  graphMemoryWords,
  NODE_WORDS,
  Node,
  NodeCold,
  NodeFlag,
  NodeKind,
} from "./decision-graph.js";
export { type DecodeSink, type DriveOptions, drive } from "./drive.js";
export { classify, FLOW_CLASS_NAMES, FlowClass, InsnFact } from "./flow-class.js";
export type { FlowOptions } from "./flow-state.js";
export { readGraph, writeGraph } from "./graph-snapshot.js";
export { InsnDecoder } from "./insn-decoder.js";
export { LOOP_CHECK_AFTER } from "./loop-guard.js";
export { Block, Insn, MAX_RAW } from "./records.js";
export { RETURN_STACK_SIZE, ReturnStack } from "./return-stack.js";
