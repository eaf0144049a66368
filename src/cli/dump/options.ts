/**
 * `ptkit dump` options: libipt ptdump's, parsed in order like ptdump does (the
 * trace file comes last; `--time` and `--tcal` exclude each other).
 */
import { parseCpu } from "../../cpu/index.js";
import { type DumpOptions, defaultDumpOptions } from "../../session/dump-options.js";
import { defaultSidebandOptions } from "../../session/sideband-config.js";
import { DECODER_NUMBERS, numberArg } from "../numbers.js";
import { parseSidebandOption } from "../sideband-options.js";

const FLAGS: Record<string, (o: DumpOptions) => void> = {
  "--no-sync": (o) => {
    o.noSync = true;
  },
  "--quiet": (o) => {
    o.quiet = true;
    // Like ptdump: no sideband records either (until a later --sb option).
    o.sideband.print = defaultSidebandOptions().print;
  },
  "--no-pad": (o) => {
    o.noPad = true;
  },
  "--no-timing": (o) => {
    o.noTiming = true;
  },
  "--no-cyc": (o) => {
    o.noCyc = true;
  },
  "--no-offset": (o) => {
    o.showOffset = false;
  },
  "--raw": (o) => {
    o.showRaw = true;
  },
  "--lastip": (o) => {
    o.showLastIp = true;
  },
  "--exec-mode": (o) => {
    o.showExecMode = true;
  },
  "--time-delta": (o) => {
    o.timeDelta = true;
  },
  "--no-tcal": (o) => {
    o.noTcal = true;
  },
  "--no-wall-clock": (o) => {
    o.noWallClock = true;
  },
  "--keep-tcal-on-ovf": (o) => {
    o.keepTcalOnOvf = true;
  },
};

/** Result of parsing: options, a request for help/version, or an error message. */
export type DumpArgs =
  | { kind: "run"; options: DumpOptions }
  | { kind: "help" }
  | { kind: "version" }
  | { kind: "error"; message: string };

export function parseDumpArgs(argv: readonly string[]): DumpArgs {
  const o = defaultDumpOptions();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith("-")) {
      if (i < argv.length - 1)
        return { kind: "error", message: `unexpected argument after the trace file: ${argv[i + 1]}` };
      o.file = arg;
      break;
    }
    if (arg === "-h" || arg === "--help") return { kind: "help" };
    if (arg === "--version") return { kind: "version" };
    const flag = FLAGS[arg];
    if (flag) {
      flag(o);
      continue;
    }
    if (arg === "--time" || arg === "--tcal") {
      if (arg === "--time" ? o.showTcal : o.showTime)
        return { kind: "error", message: "specify either --time or --tcal." };
      o.trackTime = true;
      if (arg === "--time") o.showTime = true;
      else o.showTcal = true;
      continue;
    }
    const value = argv[i + 1];
    if (arg === "-j" || arg === "--jobs") {
      i++;
      if (value === undefined) return { kind: "error", message: `${arg}: missing argument.` };
      o.jobs = value;
      continue;
    }
    if (arg === "--cpu") {
      i++;
      if (value === undefined) return { kind: "error", message: "--cpu: missing argument." };
      if (value === "none") {
        o.cpu = undefined;
        continue;
      }
      const cpu = parseCpu(value);
      if (!cpu) return { kind: "error", message: "cpu must be specified as f/m[/s]" };
      o.cpu = cpu;
      continue;
    }
    const num = DECODER_NUMBERS[arg];
    if (num) {
      i++;
      const v = numberArg(arg, value, num.max);
      if (typeof v === "string") return { kind: "error", message: v };
      o[num.key] = Number(v);
      continue;
    }
    const sb = parseSidebandOption(o.sideband, argv, i, "dump");
    if (typeof sb === "string") return { kind: "error", message: sb };
    if (sb > 0) {
      i += sb - 1;
      continue;
    }
    return { kind: "error", message: `unknown option: ${arg}.` };
  }
  // Sideband records are printed as trace time passes them: time is tracked for them.
  if (o.sideband.channels.length > 0) o.trackTime = true;
  return { kind: "run", options: o };
}

export const DUMP_HELP = `usage: ptkit dump [<options>] <ptfile>[:<from>[-<to>]]

Print every packet of a raw Intel PT trace, one per line, like libipt's ptdump.

options:
  --help|-h                 this text.
  --version                 display version information and exit.
  --no-sync                 don't try to sync to the first PSB, assume a valid
                            sync point at the beginning of the trace.
  --quiet                   don't print anything but errors.
  --no-pad                  don't show PAD packets.
  --no-timing               don't show timing packets.
  --no-cyc                  don't show CYC packets and ignore them when tracking time.
  --no-offset               don't show the offset as the first column.
  --raw                     show raw packet bytes.
  --lastip                  show last IP updates on packets with IP payloads.
  --exec-mode               show the current execution mode on mode.exec packets.
  --time                    show the estimated TSC on timing packets.
  --tcal                    show time calibration information.
  --time-delta              show timing information as delta.
  --no-tcal                 skip timing calibration.
                            this will result in errors when CYC packets are encountered.
  --no-wall-clock           suppress the no-time error and print relative time.
  --keep-tcal-on-ovf        preserve timing calibration on overflow.
  --cpu none|f/m[/s]        set cpu to the given value and decode according to:
                              none     spec (default)
                              f/m[/s]  family/model[/stepping]
  --mtc-freq <n>            set the MTC frequency (IA32_RTIT_CTL[17:14]) to <n>.
  --nom-freq <n>            set the nominal frequency (MSR_PLATFORM_INFO[15:8]) to <n>.
  --cpuid-0x15.eax          set the value of cpuid[0x15].eax.
  --cpuid-0x15.ebx          set the value of cpuid[0x15].ebx.
  -j, --jobs <n>            decode on <n> threads (default: the available cores;
                            small traces, --lastip, --time, --tcal and sideband use one).
  --sb:compact | --sb       show sideband records in compact format.
  --sb:verbose              show sideband records in verbose format.
  --sb:filename             show the filename on sideband records.
  --sb:offset               show the offset on sideband records.
  --sb:time                 show the time on sideband records.
  --sb:warn                 show sideband warnings.
  --pevent[:primary/:secondary] <file>[:<from>[-<to>]]
                            load a perf_event sideband stream from <file>;
                            its records are shown interleaved with the trace by time.
  --pevent:sample-type <val>  set perf_event_attr.sample_type to <val> (default: 0).
  --pevent:sample-config <id>:<val>
                              use sample type <val> for records with identifier <id>.
  --pevent:time-zero <val>    set perf_event_mmap_page.time_zero to <val> (default: 0).
  --pevent:time-shift <val>   set perf_event_mmap_page.time_shift to <val> (default: 0).
  --pevent:time-mult <val>    set perf_event_mmap_page.time_mult to <val> (default: 1).
  --pevent:tsc-offset <val>   show perf events <val> ticks earlier.
  --pevent:kernel-start <val> the start address of the kernel.
  --pevent:sysroot, --pevent:kcore, --pevent:vdso-x64/x32/ia32 <path>
                            ignored (as ptdump does).
  <ptfile>[:<from>[-<to>]]  load the processor trace data from <ptfile>;
                            an optional offset or range can be given.

examples:
  ptkit dump trace.pt
  ptkit dump --no-pad --raw trace.pt:0x1000-0x2000
  ptkit dump --time --time-delta --mtc-freq 3 --nom-freq 37 \\
             --cpuid-0x15.eax 2 --cpuid-0x15.ebx 308 trace.pt
  ptkit dump --sb:compact --sb:offset --pevent:sample-type 0x4 \\
             --pevent:primary sideband.pevent trace.pt
`;
