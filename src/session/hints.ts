/**
 * What to do about what is missing or wrong in what a front end was given, in its
 * own words. The session layer's messages say what is missing or wrong ("the TSC
 * frequency is unknown", "x is an ELF file, not a trace") and add the front end's
 * remedy where it gives one: ptkit's commands name their options
 * (cli/session-hints.ts), the web page its form's fields (web/worker.ts). Without a
 * hint a message ends with what is wrong, or with a remedy in no front end's words.
 */
export interface InputHints {
  /** How to give the TSC frequency (ptkit flow: "give it with --nom-freq N ..."). */
  nomFreq?: string;
  /** How to decode a trace against the ELF file at `path`, given where a trace was expected. */
  elfNotTrace?: (path: string) => string;
  /** How to read the perf.data file at `path`, given where a raw trace was expected. */
  perfNotTrace?: (path: string) => string;
  /** How to make a trace of the execution (or valgrind lackey log) at `path`. */
  execNotTrace?: (path: string) => string;
  /** How to decode bytes that hold no PSB (ptkit: its dumper's --no-sync). */
  noSync?: string;
  /** How to decode part of the trace at a time (e.g. ptkit flow's --pt FILE:FROM-TO). */
  tracePart?: string;
  /** What the files of code loaded for a decode are called (ptkit flow: "--elf or --raw file"). */
  codeFiles?: string;
  /** How to give a file for its symbols only (ptkit flow: "--symbols FILE[:BASE]"). */
  symbolsFile?: string;
  /** How to give the kernel's code (ptkit perf: "--kcore or --vmlinux"). */
  kernelFiles?: string;
  /** How to load an ELF file's code (ptkit flow: "--elf FILE[:BASE]"). */
  elfFile?: string;
  /** How to make a smaller timeline (ptkit: "write Perfetto's own format instead (--perfetto FILE), ..."). */
  smallerTimeline?: string;
  /** The analysis outputs' names (ptkit: their options, "--timeline"); absent: described. */
  outputs?: Partial<Record<"timeline" | "perfetto" | "foldedTime", string>>;
}

/** ` with HOW` when the front end says how, else nothing. */
export function withHint(how: string | undefined): string {
  return how === undefined ? "" : ` with ${how}`;
}
