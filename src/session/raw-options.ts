/**
 * What the raw-trace pipeline (raw-session.ts) is given: the code to load and the
 * trace to decode, in ptxed's order, and how to print the flow. `ptkit flow` makes
 * them from ptxed's option words (cli/flow/options.ts); a web page from a form.
 */
import type { Cpu } from "../cpu/index.js";
import type { DecoderConfig } from "../event/index.js";
import type { FileRange } from "./file-range.js";
import type { CodeFile, RawBytes } from "./flow-image.js";

export type FlowDecoderKind = "insn" | "block";

/** What ptxed prints and checks; these apply to the whole run. */
export interface FlowOutput {
  /** AT&T instead of Intel syntax (ptkit's default is Intel). */
  att: boolean;
  noInst: boolean;
  quiet: boolean;
  offset: boolean;
  time: boolean;
  rawInsn: boolean;
  check: boolean;
  resyncOnError: boolean;
  eventTime: boolean;
  eventIp: boolean;
  showBlocks: boolean;
  /** --stat or one of --stat:insn / --stat:blocks. */
  stats: boolean;
  statInsn: boolean;
  statBlocks: boolean;
  /** `-j/--jobs`, as given (see cli/jobs.ts). */
  jobs: string | undefined;
}

/**
 * One step of loading code and opening the trace, run in order. Files are named as
 * they are (a front end splits its own words, e.g. ptxed's `file:base`, into these).
 */
export type RawStep =
  /** Raw bytes of memory (`--raw file[:from[-to]]:base`). */
  | { kind: "raw"; raw: RawBytes }
  /** An ELF file (`--elf file[:base]`); `verbose` lists the sections it maps. */
  | { kind: "elf"; file: CodeFile; verbose: boolean }
  /** An ELF file (a kernel core dump, `--pevent:kcore file[:base]`) loaded into the sideband's kernel image. */
  | { kind: "kcore"; file: CodeFile; verbose: boolean }
  /**
   * The trace (`--pt file[:from[-to]]`), with the decoder's configuration; `label` names
   * it in the analysis outputs (absent: the file's name).
   */
  | {
      kind: "pt";
      range: FileRange;
      label?: string;
      decoder: FlowDecoderKind;
      /**
       * The decoder was named (`--block-decoder`, `--insn-decoder`): it decodes even
       * where the decision graph's walk would give the same output faster.
       */
      named?: boolean;
      cpu: Cpu | undefined;
      config: DecoderConfig;
    };

export function defaultFlowOutput(): FlowOutput {
  return {
    att: false,
    noInst: false,
    quiet: false,
    offset: false,
    time: false,
    rawInsn: false,
    check: false,
    resyncOnError: false,
    eventTime: false,
    eventIp: false,
    showBlocks: false,
    stats: false,
    statInsn: false,
    statBlocks: false,
    jobs: undefined,
  };
}
