/**
 * The session layer's remedies in ptkit's words: its commands' options (see
 * session/hints.ts). ptkit flow's and ptkit perf's messages read as they always have.
 */
import type { InputHints } from "../session/hints.js";

/** The hints every command shares. */
const COMMON: InputHints = {
  elfNotTrace: (path) => `decode a trace against it with 'ptkit flow --elf ${path} --pt <trace>'`,
  perfNotTrace: (path) =>
    `use 'ptkit perf ${path}' (or 'ptkit perf-dump --aux <dir> ${path}' to extract its Intel PT)`,
  execNotTrace: (path) => `make its trace with 'ptkit simulate -o trace.pt ${path}'`,
  noSync: "ptkit dump --no-sync decodes from its first byte",
  outputs: { timeline: "--timeline", perfetto: "--perfetto", foldedTime: "--folded-weight time" },
  smallerTimeline:
    "write Perfetto's own format instead (--perfetto FILE), or leave out short calls (--min-duration, e.g. 10us)",
};

/** `ptkit flow` (and the commands that decode as it does: dump, stats, latency). */
export const FLOW_HINTS: InputHints = {
  ...COMMON,
  nomFreq: "--nom-freq N (N x 100 MHz) before --pt",
  tracePart: "--pt FILE:FROM-TO",
  codeFiles: "--elf or --raw file",
  symbolsFile: "--symbols FILE[:BASE]",
  elfFile: "--elf FILE[:BASE]",
};

/** `ptkit perf`. */
export const PERF_HINTS: InputHints = {
  ...COMMON,
  tracePart: "--time-range",
  kernelFiles: "--kcore or --vmlinux",
};
