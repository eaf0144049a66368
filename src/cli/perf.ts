/**
 * `ptkit perf`: the executed instructions of each Intel PT stream (per CPU or per
 * thread) of a perf.data file, decoded with ptkit's instruction decoder over the
 * given ELF files, with the decoder set up from the file itself (errata from the
 * cpuid feature; MTC, nominal frequency and TSC:CTC ratio from AUXTRACE_INFO).
 * Sideband (mmaps, context switches) is not used yet: one image for all streams.
 */
import { cpuErrata, parseCpu } from "../cpu/index.js";
import { type DecoderConfig, defaultDecoderConfig, PtEvent, Status } from "../event/index.js";
import { FlowClass, Insn, InsnDecoder } from "../flow/index.js";
import { Image } from "../image/index.js";
import { ErrorCode, errorMessage, hex64 } from "../packet/index.js";
import {
  type AuxtraceInfo,
  auxStreamBytes,
  auxStreams,
  auxtraceBuffers,
  cpuFromCpuid,
  diagnosticText,
  intelPtDecodeParams,
  PerfDataReader,
  PerfError,
  PerfRecord,
  parseAuxtraceInfo,
  RecordType,
} from "../perf/index.js";
import { eventText } from "./flow-event-text.js";
import { loadElf } from "./flow-image.js";
import { type CliIo, LineWriter } from "./io.js";
import { fileSource } from "./node-source.js";

const HELP = `usage: ptkit perf [<options>] <perf.data>

Decode the Intel PT of a perf.data file (perf record -e intel_pt//): for each
stream (one per CPU, or per thread), a [stream ...] line, then one line per
executed instruction (its address), events in brackets as ptxed prints them,
and errors as [offset-in-stream: error]; decoding goes on at the next PSB. The
errata, MTC frequency, nominal frequency and TSC:CTC ratio come from the file.

options:
  --elf <file>[:<base>]  load an ELF file's code (repeat for more files).
  --cpu-filter <n>       decode only the stream of CPU n.
  -h, --help             this text.

examples:
  ptkit perf --elf ./loopy perf.data
  ptkit perf --elf ./prog --elf ./libfoo.so:0x7f0000000000 --cpu-filter 2 perf.data
`;

interface PerfArgs {
  file: string;
  elfs: string[];
  cpu: number | undefined;
}

function parse(argv: readonly string[]): PerfArgs | "help" | string {
  const elfs: string[] = [];
  let cpu: number | undefined;
  let file: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "-h" || a === "--help") return "help";
    if (a === "--elf" || a === "--cpu-filter") {
      const v = argv[++i];
      if (v === undefined) return `${a}: missing argument.`;
      if (a === "--elf") elfs.push(v);
      else if (!/^\d+$/.test(v)) return `--cpu-filter: bad argument: ${v}.`;
      else cpu = Number(v);
    } else if (a.startsWith("-")) return `unknown option: ${a}.`;
    else if (file === undefined) file = a;
    else return "expected exactly one perf.data file.";
  }
  return file === undefined ? "expected exactly one perf.data file." : { file, elfs, cpu };
}

export function runPerf(argv: readonly string[], io: CliIo): number {
  const args = parse(argv);
  if (args === "help") {
    io.stdout(HELP);
    return 0;
  }
  if (typeof args === "string") {
    io.stderr(`ptkit perf: ${args}\nUse --help or -h for help.\n`);
    return 1;
  }
  const image = new Image();
  for (const elf of args.elfs) {
    const problem = loadElf(io, image, elf, undefined, (w) => io.stderr(`ptkit perf: ${w}\n`));
    if (problem) {
      io.stderr(`ptkit perf: ${problem}\n`);
      return 1;
    }
  }
  const out = new LineWriter(io.stdout);
  try {
    decodeFile(io, out, args, image);
  } catch (e) {
    out.flush();
    if (!(e instanceof PerfError) && !(e as NodeJS.ErrnoException).code) throw e;
    io.stderr(`ptkit perf: ${args.file}: ${(e as Error).message}\n`);
    return 1;
  }
  out.flush();
  return 0;
}

function decodeFile(io: CliIo, out: LineWriter, args: PerfArgs, image: Image): void {
  const source = fileSource(io, args.file);
  const reader = new PerfDataReader(source, { onDiagnostic: (d) => out.line(diagnosticText(d)) });
  const rec = new PerfRecord();
  let info: AuxtraceInfo | undefined;
  while (reader.next(rec)) {
    if (rec.type === RecordType.AuxtraceInfo) info = parseAuxtraceInfo(rec.bytes) ?? info;
  }
  const config = decoderConfig(info, reader, (note) => out.line(`[${note}]`));
  const snapshot = info?.intelPt?.snapshotMode === 1n;
  for (const s of auxStreams(source, auxtraceBuffers(reader), snapshot)) {
    if (args.cpu !== undefined && !s.cpus.includes(args.cpu)) continue;
    out.line(`[stream idx ${s.idx} cpu ${s.cpus.join(",")} tid ${s.tids.join(",")}: ${s.size} bytes]`);
    decodeStream(auxStreamBytes(source, s), image, config, out);
  }
}

/** The decoder configuration a perf.data file implies. */
function decoderConfig(
  info: AuxtraceInfo | undefined,
  reader: PerfDataReader,
  note: (s: string) => void,
): DecoderConfig {
  const config = defaultDecoderConfig();
  const cpuText = cpuFromCpuid(reader.features.cpuid);
  const cpu = cpuText === undefined ? undefined : parseCpu(cpuText);
  const errata = cpu && cpuErrata(cpu);
  if (errata) config.errata = errata;
  else note("no known Intel cpu in the file: decoding without errata workarounds");
  if (!info?.intelPt) {
    note("no Intel PT AUXTRACE_INFO in the file: decoding without timing parameters");
    return config;
  }
  const p = intelPtDecodeParams(info.intelPt, reader.events);
  config.mtcFreq = p.mtcFreq ?? 0;
  config.nomFreq = p.nomFreq ?? 0;
  config.cpuid15Eax = p.cpuid15Eax ?? 0;
  config.cpuid15Ebx = p.cpuid15Ebx ?? 0;
  return config;
}

const EVENT_TEXT = { offset: false, eventTime: false, eventIp: false };

/** ptxed's loop: events before each instruction, errors resynchronise at the next PSB. */
function decodeStream(trace: Uint8Array, image: Image, config: DecoderConfig, out: LineWriter): void {
  const dec = new InsnDecoder(trace, { image, config });
  const insn = new Insn();
  const ev = new PtEvent();
  let status = dec.syncForward();
  for (;;) {
    if (status < 0) {
      if (status === -ErrorCode.Eos) return;
      out.line(`[${dec.offset.toString(16)}: ${errorMessage(status)}]`);
      status = dec.syncForward();
      continue;
    }
    while (status >= 0 && status & Status.EventPending) {
      status = dec.event(ev);
      if (status >= 0 && !ev.statusUpdate) out.line(eventText(ev, EVENT_TEXT, dec.offset));
    }
    if (status < 0) continue;
    if (status & Status.Eos) return;
    status = dec.next(insn);
    // An event came first that the decoder could not announce: take it now.
    if (status === -ErrorCode.EventIgnored) status = Status.EventPending;
    // An error after decoding the instruction still shows the instruction.
    else if (status >= 0 || insn.iclass !== FlowClass.Unknown) out.line(hex64(insn.ipHi, insn.ipLo));
  }
}
