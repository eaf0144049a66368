export { add64, div64, lt64, mul64, mulHi32, shl64, shr64, sub64, U64, type U64Like } from "../base/u64.js";
export { TimeCalibrator } from "./calibrator.js";
export { defaultTimeConfig, type TimeConfig } from "./config.js";
export { FCR_SHIFT, fcrToNumber, formatFcr, formatFcrDelta, formatFixed3 } from "./fcr.js";
export { type PacketSource, PerfClock } from "./perf-clock.js";
export { TimeTracker, TscQuery } from "./time-tracker.js";
