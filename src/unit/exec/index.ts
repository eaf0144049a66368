/** Executions: the generator's input, in memory, as JSON Lines and in binary. */
export { readExecBinary, writeExecBinary } from "./binary.js";
export { readExecJsonl, writeExecJsonl } from "./jsonl.js";
export {
  type CodeSource,
  convertLackey,
  DEFAULT_CR3,
  LackeyConverter,
  type LackeyIssue,
  type LackeyOptions,
  type LackeyResult,
  type LackeyStats,
} from "./lackey.js";
export { KERNEL_BASE_HI, KERNEL_BASE_LO, KERNEL_CODE } from "./lackey-kernel.js";
export { applyPerfEnv, type PerfEnvOptions, type PerfEnvResult } from "./perf-env.js";
export {
  checkEvent,
  checkInsn,
  EVENT_FIELDS,
  EventField,
  EXEC_EVENT_COUNT,
  EXEC_EVENT_NAMES,
  ExecBuilder,
  ExecEvent,
  Execution,
  INFO_CLASS_SHIFT,
  INFO_ZLC,
  infoClass,
  infoSize,
  isFlowEvent,
  MAX_TIME_STEP,
  packInfo,
  WakeReason,
} from "./types.js";
