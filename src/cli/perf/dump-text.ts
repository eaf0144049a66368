import { toBigInt } from "../../base/halves.js";
/** The text of `ptkit perf-dump`: the header, features, events and one line per record. */
import {
  AUXTRACE_TYPE_NAMES,
  type AuxtraceInfo,
  cpuFromCpuid,
  decodeRecord,
  type FieldValue,
  featureName,
  intelPtDecodeParams,
  type PerfDataReader,
  type PerfEvent,
  type PerfRecord,
  recordTypeName,
  type SampleId,
  SampleType,
} from "../../perf/index.js";

const hex = (n: number | bigint) => `0x${n.toString(16)}`;

/** Fields shown in hex (addresses, sizes of memory, offsets). */
const HEX_FIELDS = new Set([
  "addr",
  "len",
  "pgoff",
  "auxOffset",
  "auxSize",
  "offset",
  "size",
  "ip",
  "flags",
  "reference",
  "config",
  "sampleType",
  "timeZero",
  "timeCycles",
  "timeMask",
  "prot",
]);

function fieldText(key: string, v: FieldValue): string {
  if (typeof v === "string") return `${key}=${v === "" ? "''" : v}`;
  if (typeof v === "boolean") return v ? key : "";
  return `${key}=${HEX_FIELDS.has(key) ? hex(v) : v.toString()}`;
}

const SAMPLE_BITS: Array<[number, string]> = [
  [SampleType.Ip, "IP"],
  [SampleType.Tid, "TID"],
  [SampleType.Time, "TIME"],
  [SampleType.Addr, "ADDR"],
  [SampleType.Read, "READ"],
  [SampleType.Callchain, "CALLCHAIN"],
  [SampleType.Id, "ID"],
  [SampleType.Cpu, "CPU"],
  [SampleType.Period, "PERIOD"],
  [SampleType.StreamId, "STREAM_ID"],
  [SampleType.Raw, "RAW"],
  [SampleType.Identifier, "IDENTIFIER"],
];

export function sampleTypeText(st: number): string {
  const names = SAMPLE_BITS.filter(([bit]) => st & bit).map(([, n]) => n);
  const rest = SAMPLE_BITS.reduce((m, [bit]) => m & ~bit, st);
  if (rest) names.push(hex(rest));
  return names.join("|");
}

export function eventText(e: PerfEvent, i: number): string {
  const a = e.attr;
  return `# event ${i}: ${e.name ?? "(no name)"} type=${a.type} config=${hex(a.config)} sample_period=${a.samplePeriod} sample_type=${sampleTypeText(a.sampleType)} read_format=${hex(a.readFormat)} ${a.flagNames.join(",")} ids=${e.ids.join(",")}`;
}

/** The header, features and events, as `#` lines. */
export function headerLines(reader: PerfDataReader, fileSize: number): string[] {
  const h = reader.header;
  const lines = [
    h.raw
      ? `# pevent sideband: ${fileSize} bytes of records, sample_type=${sampleTypeText(reader.events[0]?.attr.sampleType ?? 0)}`
      : h.pipe
        ? `# perf.data: pipe mode, ${fileSize} bytes, records from ${hex(reader.dataStart)}`
        : `# perf.data: file mode, ${fileSize} bytes, header ${h.size} bytes, attrs ${hex(h.attrs.offset)} (${h.attrs.size} bytes, ${h.attrSize} per event), data [${hex(reader.dataStart)}, ${hex(reader.dataEnd)})`,
  ];
  const f = reader.features;
  if (f.sections.length > 0) lines.push(`# features: ${f.sections.map((s) => featureName(s.id)).join(" ")}`);
  const put = (name: string, v: string | number | undefined) => {
    if (v !== undefined && v !== "") lines.push(`# ${name}: ${v}`);
  };
  put("hostname", f.hostname);
  put("os release", f.osrelease);
  put("perf version", f.version);
  put("arch", f.arch);
  if (f.nrcpus) lines.push(`# nrcpus: ${f.nrcpus.online} online, ${f.nrcpus.available} available`);
  put("cpu desc", f.cpudesc);
  put("cpuid", f.cpuid);
  put("total memory", f.totalMemKiB === undefined ? undefined : `${f.totalMemKiB} kB`);
  put("cmdline", f.cmdline?.join(" "));
  for (const m of f.pmuMappings ?? []) lines.push(`# pmu mapping: ${m.type} = ${m.name}`);
  for (const g of f.groupDesc ?? []) lines.push(`# group: ${g.name} leader ${g.leader} members ${g.members}`);
  if (f.sampleTime) lines.push(`# sample time: ${f.sampleTime.first} .. ${f.sampleTime.last}`);
  if (f.clockidResNs !== undefined) lines.push(`# clockid resolution: ${f.clockidResNs} ns`);
  if (f.clockData)
    lines.push(
      `# clock data: clockid ${f.clockData.clockid} wall ${f.clockData.wallClockNs} clock ${f.clockData.clockidTimeNs}`,
    );
  if (f.compressed) {
    const c = f.compressed;
    lines.push(
      `# compressed: type ${c.type === 1 ? "zstd" : c.type} level ${c.level} ratio ${c.ratio} mmap_len ${c.mmapLen}`,
    );
  }
  if (f.auxtraceIndex) {
    lines.push(
      `# auxtrace index: ${f.auxtraceIndex.map((e) => `${hex(e.offset)} [${hex(e.size)}]`).join(", ")}`,
    );
  }
  for (const b of f.buildIds ?? []) lines.push(`# build id: ${b.buildId} ${b.filename} (pid ${b.pid})`);
  reader.events.forEach((e, i) => {
    lines.push(eventText(e, i));
  });
  return lines;
}

/** One record line: `offset [size]: PERF_RECORD_NAME fields {sample id}`. */
export function recordLine(reader: PerfDataReader, rec: PerfRecord, sid: SampleId): string {
  const at = rec.innerOffset >= 0 ? `${hex(rec.offset)}+${hex(rec.innerOffset)}` : hex(rec.offset);
  const decoded = decodeRecord(rec);
  const parts = [`${at} [${hex(rec.size)}]: PERF_RECORD_${recordTypeName(rec.type)}`];
  for (const [k, v] of Object.entries(decoded.fields)) {
    const t = fieldText(k, v);
    if (t) parts.push(t);
  }
  if (rec.auxOffset >= 0) parts.push(`data=${hex(rec.auxOffset)}`);
  if (reader.sampleId(rec, sid)) parts.push(sampleIdText(sid, reader));
  if (decoded.problem) parts.push(`(${decoded.problem})`);
  return parts.join(" ");
}

function sampleIdText(s: SampleId, reader: PerfDataReader): string {
  const p: string[] = [];
  if (s.fromSample && s.sampleType & SampleType.Ip) p.push(`ip=${hex(toBigInt(s.ipHi, s.ipLo))}`);
  if (s.sampleType & SampleType.Tid) p.push(`pid/tid=${s.pid}/${s.tid}`);
  if (s.sampleType & SampleType.Time) p.push(`time=${toBigInt(s.timeHi, s.timeLo)}`);
  if (s.sampleType & SampleType.Cpu) p.push(`cpu=${s.cpu}`);
  if (s.sampleType & (SampleType.Id | SampleType.Identifier)) p.push(`id=${s.id}`);
  if (s.fromSample && s.sampleType & SampleType.Period) p.push(`period=${s.period}`);
  const name = reader.events[s.event]?.name;
  if (name) p.push(`event=${name}`);
  return `{${p.join(" ")}}`;
}

/** Intel PT words that are bit masks or 64-bit patterns, shown in hex (the others are counts and ratios). */
const HEX_WORDS = new Set(["timeZero", "tscBit", "noRetCompBit", "mtcBit", "mtcFreqBits", "cycBit"]);

/** AUXTRACE_INFO in full, and the decoder options it implies. */
export function auxtraceInfoLines(info: AuxtraceInfo, reader: PerfDataReader): string[] {
  const lines = [
    `    type ${info.type} (${AUXTRACE_TYPE_NAMES[info.type] ?? "unknown"}), ${info.priv.length} private words`,
  ];
  const pt = info.intelPt;
  if (!pt) return lines.concat(info.priv.map((v, i) => `    priv[${i}] ${hex(v)}`));
  for (const [k, v] of Object.entries(pt)) {
    const text = typeof v === "bigint" && HEX_WORDS.has(k) ? hex(v) : String(v);
    lines.push(`    ${k.padEnd(18)} ${text}`);
  }
  const params = intelPtDecodeParams(pt, reader.events);
  const opts: string[] = [];
  const cpu = cpuFromCpuid(reader.features.cpuid);
  if (cpu) opts.push(`--cpu ${cpu}`);
  if (params.mtcFreq !== undefined) opts.push(`--mtc-freq ${params.mtcFreq}`);
  if (params.nomFreq) opts.push(`--nom-freq ${params.nomFreq}`);
  if (params.cpuid15Eax)
    opts.push(`--cpuid-0x15.eax ${params.cpuid15Eax} --cpuid-0x15.ebx ${params.cpuid15Ebx}`);
  const bits = (["tsc", "mtc", "cyc", "noRetComp"] as const).filter((k) => params[k]);
  lines.push(`    config bits        ${bits.join(" ") || "(none)"}`);
  lines.push(`    decode with        ${opts.join(" ")}`);
  return lines;
}
