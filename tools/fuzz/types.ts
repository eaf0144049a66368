/** What the campaign (run.ts) hands a worker (worker.ts), and what comes back. */
import type { Failure } from "./triage.js";

/** Cases run through a library call instead of a ptkit command. */
export type Driver = "event" | "elf" | "exec-jsonl" | "exec-binary" | "msr";

/** Placeholders in a case's argv: the mutated input's path, and a scratch directory. */
export const INPUT = "@@";
export const SCRATCH = "@SCRATCH@";

export interface Case {
  /** Index in the campaign: (seed, index) determine everything below. */
  index: number;
  format: string;
  /** The seed's name and the mutations applied, for the log. */
  seed: string;
  what: string[];
  input: Uint8Array;
  /** The input's file name (its extension can matter to ptkit). */
  inputName: string;
  /** Working directory (relative paths in argv are resolved against it). */
  cwd: string;
  /** ptkit's argv, with {@link INPUT} and {@link SCRATCH} placeholders. */
  argv?: string[];
  driver?: Driver;
  /** Give a directory where the input file goes (ptkit must say it is not a file). */
  inputIsDir?: boolean;
  /** The same input with different bytes past its declared end: output must not change. */
  variant?: Uint8Array;
  /** Run the real executable (exit code, stderr) rather than in-process. */
  process?: boolean;
  /** Feed the input on standard input, as `-`. */
  stdin?: boolean;
}

export type CaseResult = { ok: true } | { ok: false; failure: Failure };
