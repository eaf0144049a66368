/**
 * perf script's lines for the samples of the file's other events (`perf record -e
 * intel_pt//u -e cycles`, `-e cpu-clock`, with or without -g): their SAMPLE records,
 * kept as they are read, then printed in time order among the Intel PT samples (a
 * {@link Timeline} of the interleave: perf sorts every record by time, and before
 * each one runs the Intel PT decoders up to its time). Their fields are perf script
 * 6.1's for the event's type (builtin-script.c: hardware, software; -F sw:/hw:),
 * less those the samples lack: perf leaves those out, or refuses fields -F named.
 * Tracepoint samples are not printed (their text needs the tracing data's formats).
 */
import type { ByteChunks } from "../analysis/export/byte-chunks.js";
import type { SymbolHit } from "../analysis/index.js";
import { splitBigInt } from "../base/halves.js";
import {
  type PerfDataReader,
  type PerfEvent,
  PerfRecord,
  parseSampleChain,
  perfTimeToTsc,
  RecordType,
  SampleChain,
  SampleId,
  SampleType,
  type TscConversion,
} from "../perf/index.js";
import { lt64 } from "../time/index.js";
import type { ProcessImages } from "./perf-images.js";
import type { ScriptComms } from "./perf-script-comms.js";
import { hexText } from "./perf-script-fields.js";
import type { Field, PerfScriptOptions, ScriptFields } from "./perf-script-options.js";
import type { Timeline, TscRange } from "./perf-stream.js";

/** PERF_TYPE_* of perf_event_attr.type. */
const TYPE_HARDWARE = 0;
const TYPE_SOFTWARE = 1;
const TYPE_TRACEPOINT = 2;

/** The -F set an event's samples follow: software events have their own, the others print as hardware's. */
function kindOf(type: number): "hw" | "sw" {
  return type === TYPE_SOFTWARE ? "sw" : "hw";
}

/** The fields perf checks against the sample_type (evsel__check_attr), with the name it gives the bit. */
const NEEDS: ReadonlyArray<[Field, number, string]> = [
  ["ip", SampleType.Ip, "IP"],
  ["addr", SampleType.Addr, "ADDR"],
  ["tid", SampleType.Tid, "TID"],
  ["pid", SampleType.Tid, "TID"],
  ["time", SampleType.Time, "TIME"],
  ["cpu", SampleType.Cpu, "CPU"],
];

/**
 * The fields of `set` that the samples of `event` have: the others dropped, or a
 * string (perf's refusal) when -F named one (`named`). perf lets CPU and ADDR
 * through in a file with an auxtrace feature (`auxtrace`).
 */
export function sampledFields(
  set: ReadonlySet<Field>,
  named: ReadonlySet<Field>,
  event: PerfEvent,
  auxtrace: boolean,
): Set<Field> | string {
  const out = new Set(set);
  for (const [field, bit, what] of NEEDS) {
    if (!out.has(field) || event.attr.sampleType & bit) continue;
    if (named.has(field)) {
      if (auxtrace && (field === "cpu" || field === "addr")) continue;
      return `Samples for '${eventName(event)}' event do not have ${what} attribute set. Cannot print '${field}' field.`;
    }
    out.delete(field);
  }
  if (!out.has("ip")) for (const f of ["sym", "symoff", "dso", "srcline"] as const) out.delete(f);
  return out;
}

/** perf's name of an event (the event_desc feature's). */
export function eventName(event: PerfEvent): string {
  return event.name ?? `unknown attr type: ${event.attr.type}`;
}

/**
 * The fields perf script prints for the hardware and software samples of the file:
 * those of the first event of each type (perf checks that one and applies the outcome
 * to the type, the Intel PT samples, which are hardware's, too). A string: perf's refusal.
 */
export function fileFields(
  fields: ScriptFields,
  events: readonly PerfEvent[],
  auxtrace: boolean,
  ptCpu = true,
): ScriptFields | string {
  const out = { ...fields };
  // The events perf synthesizes from the trace (instructions, branches, psb, cbr, ...)
  // have a CPU where the Intel PT event has one and its buffers were per CPU
  // (intel_pt_synth_events): the power lines' CPU column is theirs; the hardware type's
  // too when the file recorded no hardware event of its own (a cycles event decides it).
  if (!ptCpu && out.synth.has("cpu") && !fields.named.hw.has("cpu")) {
    out.synth = new Set(out.synth);
    out.synth.delete("cpu");
  }
  for (const [kind, type] of [
    ["hw", TYPE_HARDWARE],
    ["sw", TYPE_SOFTWARE],
  ] as const) {
    const first = events.find((e) => e.attr.type === type);
    if (first === undefined) {
      if (kind === "hw" && !ptCpu && out.hw.has("cpu") && !fields.named.hw.has("cpu")) {
        out.hw = new Set(out.hw);
        out.hw.delete("cpu");
      }
      continue;
    }
    const f = sampledFields(fields[kind], fields.named[kind], first, auxtrace);
    if (typeof f === "string") return f;
    out[kind] = f;
  }
  return out;
}

/** The SAMPLE records of the events other than Intel PT's, held (their bytes) until printed. */
export class OtherSamples {
  private bytes = new Uint8Array(1 << 12);
  private used = 0;
  private readonly starts: number[] = [];
  private readonly times: number[] = [];
  private readonly events: number[] = [];
  private readonly id = new SampleId();
  /** SAMPLE records skipped: too short for their fields, or of no event of the file. */
  skipped = 0;
  /** The first skipped one: its offset and why. */
  firstSkipped: { offset: number; message: string } | undefined;

  /** Keep `rec` if it is a SAMPLE. */
  record(rec: PerfRecord, reader: PerfDataReader): void {
    if (rec.type !== RecordType.Sample) return;
    const id = this.id;
    if (!reader.sampleId(rec, id)) {
      this.skip(rec, `SAMPLE record of ${rec.size} bytes too short for its fields`);
      return;
    }
    // (The reader takes an id no event has for the first event's: not here.)
    if (
      reader.events.length > 1 &&
      id.sampleType & (SampleType.Id | SampleType.Identifier) &&
      reader.eventOfId(id.id) < 0
    ) {
      this.skip(rec, `SAMPLE record of unknown event id ${id.id}`);
      return;
    }
    const n = rec.size;
    if (this.used + n > this.bytes.length) {
      const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.used + n));
      grown.set(this.bytes.subarray(0, this.used));
      this.bytes = grown;
    }
    this.bytes.set(rec.bytes.subarray(0, n), this.used);
    this.starts.push(this.used);
    this.times.push(id.time);
    this.events.push(id.event);
    this.used += n;
  }

  private skip(rec: PerfRecord, message: string): void {
    this.skipped++;
    this.firstSkipped ??= { offset: rec.offset, message };
  }

  get length(): number {
    return this.starts.length;
  }

  /** The samples' indices in time order (file order among equal times, as perf's ordered queue). */
  order(): number[] {
    const times = this.times;
    return Array.from(this.starts, (_, i) => i).sort((a, b) => times[a]! - times[b]! || a - b);
  }

  /** Sample i as a record (a view into the kept bytes) and its event. */
  view(i: number, rec: PerfRecord): number {
    const at = this.starts[i]!;
    rec.offset = at;
    rec.type = RecordType.Sample;
    rec.size = (this.bytes[at + 6]! | (this.bytes[at + 7]! << 8)) >>> 0;
    rec.bytes = this.bytes.subarray(at, at + rec.size);
    return this.events[i]!;
  }

  time(i: number): number {
    return this.times[i]!;
  }
}

/** What printing the samples needs from the session. */
export interface SampleLinesContext {
  reader: PerfDataReader;
  fields: ScriptFields;
  conv: TscConversion | undefined;
  comms: ScriptComms;
  /** The names of the addresses of each process, replayed to each sample's time. */
  images: ProcessImages;
  nameWidth: number;
  options: Pick<PerfScriptOptions, "ns" | "pids" | "tids" | "comms" | "cpus">;
  range: TscRange | undefined;
  /** The Intel PT event (its samples, if any, are not printed), or -1. */
  ptEvent: number;
  note: (text: string) => void;
}

/** Per event: how its samples print (undefined: not printed). */
interface EventPrint {
  name: string;
  f: Set<Field>;
  /** Whether its samples' callchains are printed (perf: then the comm is not padded). */
  chain: boolean;
  /** Whether its addr is named like an ip (perf: a page fault's). */
  addrSym: boolean;
}

/** PERF_COUNT_SW_PAGE_FAULTS, _MIN and _MAJ: the software events whose addr perf names (sample_addr_correlates_sym). */
const PAGE_FAULTS = [2, 5, 6];

/**
 * The samples as a {@link Timeline}: each printed to `out` when the interleave reaches
 * its time. Throws nothing: a sample whose fields do not fit its record is skipped.
 */
export function sampleTimeline(
  samples: OtherSamples,
  out: ByteChunks & { line(text: string): void },
  ctx: SampleLinesContext,
): Timeline {
  const { reader, fields, conv, comms, images, options } = ctx;
  const useChain = reader.events.some((e) => e.attr.sampleType & SampleType.Callchain);
  const printFlags = fields.hw.has("flags") || fields.sw.has("flags") || fields.synth.has("flags");
  let tracepoints = 0;
  const prints: Array<EventPrint | "tracepoint" | undefined> = reader.events.map((e, i) => {
    if (i === ctx.ptEvent) return undefined;
    if (e.attr.type === TYPE_TRACEPOINT) return "tracepoint";
    // Hardware and software events: their type's fields, as the first event of the
    // type left them (fileFields); the other types print as hardware, less what they lack.
    const kind = kindOf(e.attr.type);
    const own = e.attr.type === TYPE_HARDWARE || e.attr.type === TYPE_SOFTWARE;
    const f = own ? fields[kind] : (sampledFields(fields[kind], new Set(), e, false) as Set<Field>);
    const chain = useChain && f.has("ip") && (e.attr.sampleType & SampleType.Callchain) !== 0;
    const addrSym = e.attr.type === TYPE_SOFTWARE && PAGE_FAULTS.includes(Number(e.attr.config));
    return { name: eventName(e), f, chain, addrSym };
  });
  const order = samples.order();
  const rec = new PerfRecord();
  const id = new SampleId();
  const chain = new SampleChain();
  let bad = 0;
  let firstBad: string | undefined;
  const t = {
    nextHi: 0,
    nextLo: 0,
    *run(): Generator<void, void, void> {
      for (const i of order) {
        const time = samples.time(i);
        const tsc = conv ? (perfTimeToTsc(BigInt(time), conv) ?? 0n) : BigInt(time);
        const { hi, lo } = splitBigInt(tsc, { hi: 0, lo: 0 });
        t.nextHi = hi;
        t.nextLo = lo;
        yield;
        const event = samples.view(i, rec);
        const p = prints[event];
        if (p === undefined) continue;
        if (p === "tracepoint") {
          tracepoints++;
          continue;
        }
        const range = ctx.range;
        if (range && (lt64(hi, lo, range.fromHi, range.fromLo) || lt64(range.toHi, range.toLo, hi, lo)))
          continue;
        reader.sampleId(rec, id);
        const problem = parseSampleChain(rec.bytes, 8, rec.size, reader.events[event]!.attr, chain);
        if (problem !== undefined) {
          bad++;
          firstBad ??= problem;
          continue;
        }
        images.advance(hi, lo);
        print(p, time);
      }
      if (tracepoints > 0)
        ctx.note(
          `${tracepoints} tracepoint sample${tracepoints === 1 ? "" : "s"} not printed (ptkit does not read the tracing data's formats)`,
        );
      if (bad > 0) ctx.note(`${bad} SAMPLE record${bad === 1 ? "" : "s"} skipped: ${firstBad}`);
    },
  };

  const print = (p: EventPrint, time: number): void => {
    const { f } = p;
    const pid = id.pid;
    const tid = id.tid;
    const comm = f.has("comm") || options.comms ? comms.name(pid, tid, time) : "";
    if (options.pids !== undefined && !options.pids.includes(pid)) return;
    if (options.tids !== undefined && !options.tids.includes(tid)) return;
    if (options.comms !== undefined && !options.comms.includes(comm)) return;
    // (A sample without CPU has -1: perf leaves it out of every CPU list.)
    if (options.cpus !== undefined && !options.cpus.includes(id.cpu)) return;
    let line = "";
    if (f.has("comm")) line += p.chain ? `${comm} ` : `${comm.padStart(16)} `;
    if (f.has("pid") && f.has("tid")) line += `${String(pid).padStart(5)}/${String(tid).padEnd(5)} `;
    else if (f.has("pid")) line += `${String(pid).padStart(5)} `;
    else if (f.has("tid")) line += `${String(tid).padStart(5)} `;
    // (C's %03d: a sample without CPU, allowed in a file with a trace, has -1: "-01".)
    if (f.has("cpu")) {
      const cpu = id.cpu;
      line += `[${cpu < 0 ? `-${String(-cpu).padStart(2, "0")}` : String(cpu).padStart(3, "0")}] `;
    }
    if (f.has("time")) {
      const frac = String(time % 1e9).padStart(9, "0");
      line += `${String(Math.floor(time / 1e9)).padStart(5)}.${options.ns ? frac : frac.slice(0, 6)}: `;
    }
    // (Without PERIOD in the sample_type perf gives the attr's sample_period.)
    if (f.has("period")) {
      const period =
        id.sampleType & SampleType.Period
          ? String(id.period)
          : String(reader.events[id.event]!.attr.samplePeriod);
      line += `${period.padStart(10)} `;
    }
    if (f.has("event")) line += `${p.name.padStart(ctx.nameWidth)}: `;
    // (perf's flags are its branch samples'; other samples have none. Printed when any
    // kind of event's fields have them: perf keeps one print_flags for all.)
    if (printFlags) line += `  ${"".padEnd(22)}`;
    if (f.has("addr")) {
      line += hexText(id.addrHi, id.addrLo).padStart(16);
      if (p.addrSym) line += symText(f, pid, id.addrHi, id.addrLo);
    }
    if (f.has("ip")) {
      if (p.chain) {
        out.line(line);
        frames(f, pid);
      } else {
        out.text(`${line} `);
        out.text(`${hexText(id.ipHi, id.ipLo).padStart(16)}${symText(f, pid, id.ipHi, id.ipLo)}`);
      }
    } else out.text(line);
    out.byte(0x0a);
  };

  // ` sym+0xoff (dso)` as the fields ask.
  const symText = (f: Set<Field>, pid: number, hi: number, lo: number): string =>
    f.has("sym") || f.has("dso") ? partsText(f, images.parts(pid, hi, lo)) : "";
  // The same of the address images.parts() looked up last.
  const partsText = (f: Set<Field>, hit: SymbolHit): string => {
    let s = "";
    if (f.has("sym"))
      s += images.partSym
        ? ` ${hit.name}${f.has("symoff") ? `+0x${hit.offset.toString(16)}` : ""}`
        : " [unknown]";
    if (f.has("dso")) s += ` (${images.partDso ?? "[unknown]"})`;
    return s;
  };

  // The callchain, one frame a line: perf shows an address in a file as its offset there.
  const frames = (f: Set<Field>, pid: number): void => {
    for (let i = 0; i < chain.length; i++) {
      if (chain.isMarker(i)) continue;
      const hi = chain.hi[i]!;
      const lo = chain.lo[i]!;
      const hit = images.parts(pid, hi, lo);
      const offset = images.partOffset;
      const addr = offset >= 0 ? offset.toString(16) : hexText(hi, lo);
      out.line(`\t${addr.padStart(16)}${partsText(f, hit)}`);
    }
  };
  return t;
}
