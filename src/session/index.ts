/**
 * ptkit/session: the pipelines from input files to answers, for any front end (the
 * CLI, a web page or worker, a shard runner), browser-safe: files come through an
 * injected {@link SessionIo} ({@link FilesIo} holds a front end's own files).
 */
export type { AnalysisOptions } from "./analysis-options.js";
export { defaultAnalysisOptions, wantsAnalysis } from "./analysis-options.js";
export {
  type AnnotatedFunction,
  type AnnotatedLine,
  annotateCoverage,
  annotationText,
  type CodeReader,
} from "./annotate.js";
export { ANSWER_FILES, type AnswerFile, blockFunction, SHOWN_ROWS } from "./answer-files.js";
export { type FunctionRow, functionRows, type PerfAnswers } from "./answers.js";
export { ByteLines } from "./byte-lines.js";
export { type CoverageBlock, type CoverageRow, coverageRows } from "./coverage-rows.js";
export { Dumper } from "./dump-listing.js";
export { type DumpOptions, defaultDumpOptions } from "./dump-options.js";
export { FilesIo } from "./files-io.js";
export type { CodeFile, RawBytes } from "./flow-image.js";
export { GraphCache } from "./graph-cache.js";
export type { InputHints } from "./hints.js";
export type { ChunkRunner, ChunkTask, FileWriter, GraphStore, Lines, SessionIo } from "./io.js";
export { NOT_REGULAR } from "./io.js";
export { resolvePath } from "./paths.js";
export { type PerfAnswersOptions, perfAnswers, timelineBoundFor } from "./perf-answers.js";
export { decodePerf, type PerfInternals, type PerfOptions } from "./perf-session.js";
export {
  type RawAnswersOptions,
  type RawCodeFile,
  type RawDecoderSettings,
  rawAnswers,
} from "./raw-answers.js";
export { defaultFlowOutput, type FlowOutput, type RawStep } from "./raw-options.js";
export {
  decodeRaw,
  type RawDecodeOptions,
  type RawInput,
  type RawPieces,
  type RawSetup,
  setupRaw,
} from "./raw-session.js";
export { defaultSidebandOptions, type SidebandOptions } from "./sideband-config.js";
