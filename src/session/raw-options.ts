/**
 * What the raw-trace pipeline (raw-session.ts) is given: the code to load and the
 * trace to decode, in ptxed's order, and how to print the flow. `ptkit flow` makes
 * them from ptxed's option words (cli/flow-options.ts); a web page from a form.
 */
import type { Cpu } from "../cpu/index.js";
import type { DecoderConfig } from "../event/index.js";

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

/** One step of loading code and opening the trace, run in order. */
export type RawStep =
  /** `--raw file[:from[-to]]:base`, the argument as given. */
  | { kind: "raw"; arg: string }
  /** `--elf file[:base]`; `verbose` lists the sections it maps. */
  | { kind: "elf"; arg: string; verbose: boolean }
  /** `--pevent:kcore file[:base]`: an ELF (a kernel core dump) loaded into the sideband's kernel image. */
  | { kind: "kcore"; arg: string; verbose: boolean }
  /** `--pt file[:from[-to]]` with the configuration at that point. */
  | { kind: "pt"; arg: string; decoder: FlowDecoderKind; cpu: Cpu | undefined; config: DecoderConfig };

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
