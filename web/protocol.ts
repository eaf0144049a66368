/**
 * The messages between the web app's page (app.ts) and its decoding worker
 * (worker.ts). Files travel as File objects (the worker reads them a slice at a
 * time); results come back with their output files as transferred buffers.
 */
import type { PerfAnswers, RawCodeFile, RawDecoderSettings } from "../src/session/index.js";

/** Page -> worker: what to decode. */
export type DecodeRequest =
  /** `perfData` (one of `files`) with the others as its binaries. */
  | { kind: "perf"; files: File[]; perfData: string }
  /** The raw trace `trace` (one of `files`) against `code` (the others), with the decoder settings. */
  | { kind: "raw"; files: File[]; trace: string; code: RawCodeFile[]; settings: RawDecoderSettings };

/** Worker -> page. */
export type WorkerMessage =
  | { kind: "progress"; done: number; total: number }
  /** `timelineMinDuration`: the timeline leaves out calls shorter than this (ns), 0 for none. */
  | { kind: "done"; answers: PerfAnswers; timelineMinDuration: number; ms: number }
  | { kind: "failed"; message: string };
