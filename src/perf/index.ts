/** ptkit/perf: perf.data files (perf record -e intel_pt//) read as a stream. */

export { diagnosticText } from "../base/diagnostic.js";
export {
  ATTR_SIZE_VER0,
  type PerfEvent,
  type PerfEventAttr,
  parseAttr,
  sampleIdSize,
  sidebandAttr,
} from "./attr.js";
export {
  type AuxRange,
  type AuxStream,
  type AuxtraceBuffer,
  auxStreamBytes,
  auxStreams,
  auxtraceBuffers,
  forEachAuxChunk,
  newDataStart,
  readStream,
  streamSource,
} from "./aux-streams.js";
export {
  AUXTRACE_TYPE_NAMES,
  type AuxtraceInfo,
  cpuFromCpuid,
  type IntelPtDecodeParams,
  type IntelPtInfo,
  intelPtDecodeParams,
  intelPtEvent,
  parseAuxtraceInfo,
} from "./auxtrace-info.js";
export { auxFlagNames, type DecodedRecord, decodeRecord, type FieldValue } from "./decode.js";
export { type PerfDiagnostic, PerfError } from "./errors.js";
export type { BuildIdEntry, PerfFeatures } from "./features.js";
export { type FileSection, type PerfFileHeader, parseFileHeader, rawHeader } from "./file-header.js";
export {
  type CpuSwitch,
  type PerfTasks,
  readTasks,
  recordConversion,
  type TaskChange,
  type Timed,
  type TraceGap,
} from "./perf-tasks.js";
export { PerfDataReader, type PerfReaderOptions } from "./reader.js";
export { PerfRecord } from "./record.js";
export { CONTEXT_MARKER_LO, parseSampleChain, ReadFormat, SampleChain } from "./sample.js";
export { SampleId } from "./sample-id.js";
export { Abi, copySections, SidebandContext } from "./sideband-context.js";
export {
  PeventChannel,
  type PeventConfig,
  SidebandWarning,
  sidebandWarningText,
} from "./sideband-pevent.js";
export { type PeventRecord, type PeventSamples, readPevent } from "./sideband-record.js";
export { type SidebandHost, type SidebandPrint, SidebandSession } from "./sideband-session.js";
export { SidebandFormat, sidebandRecordText } from "./sideband-text.js";
export { type ByteSource, bytesSource } from "./source.js";
export {
  PerfTimeParts,
  perfTimeToTsc,
  type TscConversion,
  tscConversionProblem,
  tscToPerfTime,
} from "./time-conv.js";
export {
  AuxFlag,
  FEATURE_NAMES,
  featureName,
  Misc,
  RecordType,
  recordTypeName,
  SampleType,
} from "./types.js";
