export {
  CallStack,
  DEFAULT_DEPTH_LIMIT,
  FRAME_END_NAMES,
  FRAME_KIND_NAMES,
  FrameEnd,
  FrameKind,
  type FrameListener,
} from "./callstack.js";
export { CallAnalysis, type CallAnalysisOptions } from "./callstack-analysis.js";
export { DEFAULT_LOOKAHEAD, TimedOps } from "./callstack-clock.js";
export {
  type CallSink,
  type ClockInfo,
  type ClockUnit,
  MARKER_NAMES,
  Marker,
  ThreadTrack,
} from "./callstack-sink.js";
export { endsBlock, FlowTracker, movesStack } from "./callstack-tracker.js";
export {
  decodeCount,
  decodeCoverage,
  decodeFeed,
  decodeTimedFeed,
  FastCoverage,
  Handover,
  NO_WALK_ERRATA,
  timedWalk,
  type WalkErrata,
  type WalkFeed,
  type WalkStops,
  type WalkTime,
  walkErrata,
} from "./coverage-decode.js";
export { Demangler, type DemanglerGlue, isMangled, LazyDemangler, type NameDemangler } from "./demangle.js";
export { MAX_DIAGNOSTICS, type SymbolDiagnostic } from "./elf-data.js";
export { IMAGE_AND_SYMBOLS, isPltSection, SYMBOL_SECTIONS } from "./elf-needs.js";
export { type ChunkOut, immediate } from "./export/byte-chunks.js";
export { AFL_MAP_SIZE, Coverage, EdgeKind, edgeKindName } from "./export/coverage.js";
export { FoldedStacks, type FoldedWeight } from "./export/folded.js";
export { type FoldedFunction, type FrameTree, foldedFunctions } from "./export/folded-functions.js";
export { FrameNames, type TrackSymbols } from "./export/frame-names.js";
export { JSONL_SCHEMA, JSONL_VERSION, JsonlWriter } from "./export/jsonl.js";
export {
  LATENCY_SCHEMA,
  LATENCY_TIME_UNITS,
  LATENCY_VERSION,
  writeLatencyJson,
} from "./export/latency-json.js";
export { TOP_CALLERS, writeLatencyText } from "./export/latency-text.js";
export { type PerfettoOptions, PerfettoWriter } from "./export/perfetto.js";
export { ShortFrameFilter } from "./export/short-frames.js";
export {
  TIMELINE_SCHEMA,
  TIMELINE_VERSION,
  type TimelineOptions,
  TimelineWriter,
} from "./export/timeline.js";
export {
  DroppedTotals,
  FrameDurations,
  SUMMARY_BUDGET,
  summaryBound,
} from "./export/timeline-summary.js";
export { growFloat64, growInt32, growUint32, KeyTable } from "./key-table.js";
export {
  type CallerLatency,
  CallLatency,
  DEFAULT_SLOWEST,
  type FunctionLatency,
  type LatencyOptions,
  type LatencySummary,
  type SlowCall,
} from "./latency.js";
export {
  bucketOf,
  type DurationStats,
  durationStats,
  type HistogramBucket,
  log2Histogram,
  nearestRank,
} from "./latency-stats.js";
export { type FunctionCount, Profile, type ProfileSummary } from "./run-profile.js";
export { SymbolHit, SymbolTable, type SymbolTableOptions } from "./symbol-table.js";
export { Symbolizer } from "./symbolizer.js";
export {
  LoggedTime,
  replayWalk,
  type WalkEnd,
  type WalkLogSink,
  type WalkLogSource,
  WalkLogWriter,
} from "./walk-log.js";
