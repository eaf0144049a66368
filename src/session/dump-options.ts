/**
 * What a ptdump-style packet listing shows (libipt ptdump's options, which `ptkit dump`
 * parses: src/cli/dump/options.ts), and the decoder settings it needs.
 */
import type { Cpu } from "../cpu/index.js";
import { defaultSidebandOptions, type SidebandOptions } from "./sideband-config.js";

export interface DumpOptions {
  noSync: boolean;
  quiet: boolean;
  noPad: boolean;
  noTiming: boolean;
  noCyc: boolean;
  showOffset: boolean;
  showRaw: boolean;
  showLastIp: boolean;
  showExecMode: boolean;
  trackTime: boolean;
  showTime: boolean;
  showTcal: boolean;
  timeDelta: boolean;
  noTcal: boolean;
  noWallClock: boolean;
  keepTcalOnOvf: boolean;
  cpu: Cpu | undefined;
  mtcFreq: number;
  nomFreq: number;
  cpuid15Eax: number;
  cpuid15Ebx: number;
  file: string | undefined;
  sideband: SidebandOptions;
  /** `-j/--jobs`, as given (the CLI's: src/cli/jobs.ts). */
  jobs: string | undefined;
}

export function defaultDumpOptions(): DumpOptions {
  return {
    noSync: false,
    quiet: false,
    noPad: false,
    noTiming: false,
    noCyc: false,
    showOffset: true,
    showRaw: false,
    showLastIp: false,
    showExecMode: false,
    trackTime: false,
    showTime: false,
    showTcal: false,
    timeDelta: false,
    noTcal: false,
    noWallClock: false,
    keepTcalOnOvf: false,
    cpu: undefined,
    mtcFreq: 0,
    nomFreq: 0,
    cpuid15Eax: 0,
    cpuid15Ebx: 0,
    file: undefined,
    sideband: defaultSidebandOptions(),
    jobs: undefined,
  };
}
