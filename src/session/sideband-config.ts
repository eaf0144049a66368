/**
 * The sideband of a raw trace (libipt's pevent channels, `--pevent:*`): how records
 * are printed and the parameters of each channel, as `ptkit dump` and `ptkit flow`
 * take them (cli/sideband-options.ts parses the options; sideband.ts loads them).
 */
import type { SidebandPrint } from "../perf/index.js";

/** The --pevent:* parameters in force when a channel is added. */
export interface PeventParams {
  sampleType: number;
  /** --pevent:sample-config id:type entries, in order (the first for an id counts, as in libipt). */
  sampleConfig: Array<[bigint, number]>;
  timeZero: bigint;
  timeShift: number;
  timeMult: bigint;
  tscOffset: bigint;
  kernelStart: bigint;
  sysroot: string | undefined;
  vdsoX64: string | undefined;
  vdsoX32: string | undefined;
  vdsoIa32: string | undefined;
}

/** A `--pevent:primary/secondary` channel: its file argument and the parameters at that point. */
export interface PeventChannelArg {
  arg: string;
  primary: boolean;
  params: PeventParams;
}

export interface SidebandOptions {
  print: SidebandPrint;
  /** --sb:warn: show warnings, not only errors. */
  warn: boolean;
  /** --sb:switch (ptxed): print the new image's name on context switches. */
  showSwitch: boolean;
  params: PeventParams;
  channels: PeventChannelArg[];
}

const U64_MAX = 0xffff_ffff_ffff_ffffn;

export function defaultSidebandOptions(): SidebandOptions {
  return {
    print: { format: 0, filename: false, offset: false, time: false },
    warn: false,
    showSwitch: false,
    params: {
      sampleType: 0,
      sampleConfig: [],
      timeZero: 0n,
      timeShift: 0,
      timeMult: 1n,
      tscOffset: 0n,
      // ptxed's default: ring 0 is not traced.
      kernelStart: U64_MAX,
      sysroot: undefined,
      vdsoX64: undefined,
      vdsoX32: undefined,
      vdsoIa32: undefined,
    },
    channels: [],
  };
}

/** Which tool's option set: ptdump accepts `--pevent` alone and ignores paths; ptxed has --sb:switch. */
export type SidebandTool = "dump" | "flow";
