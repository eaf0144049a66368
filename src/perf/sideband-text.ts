/**
 * libipt's text for a pevent sideband record: compact (one line, the record's fields
 * then its samples in braces) or verbose (the record's name, then one `  name: value`
 * line per field and sample). Numbers are hex without prefix, as libipt prints them.
 */
import type { PeventRecord, PeventSamples } from "./sideband-record.js";
import { AuxFlag, Misc, RecordType } from "./types.js";

export const SidebandFormat = { Compact: 1, Verbose: 2 } as const;
export type SidebandFormat = (typeof SidebandFormat)[keyof typeof SidebandFormat];

const hex = (v: number | bigint | string | undefined): string =>
  typeof v === "string" ? v : (v ?? 0).toString(16);

/** The record's name and its fields: compact values and verbose `label: value` pairs. */
function describe(rec: PeventRecord): { name: string; compact: string; verbose: Array<[string, string]> } {
  const f = rec.fields;
  const pair = (a: string, b: string) => `${hex(f[a])}/${hex(f[b])}`;
  const labelled = (...names: Array<[string, string]>) =>
    names.map(([label, key]) => [label, hex(f[key])] as [string, string]);
  switch (rec.type) {
    case RecordType.Mmap:
      return {
        name: "PERF_RECORD_MMAP",
        compact: `${pair("pid", "tid")}, ${hex(f.addr)}, ${hex(f.len)}, ${hex(f.pgoff)}, ${f.filename}`,
        verbose: labelled(
          ["pid", "pid"],
          ["tid", "tid"],
          ["addr", "addr"],
          ["len", "len"],
          ["pgoff", "pgoff"],
          ["filename", "filename"],
        ),
      };
    case RecordType.Mmap2:
      return {
        name: "PERF_RECORD_MMAP2",
        compact: [
          pair("pid", "tid"),
          ...["addr", "len", "pgoff", "maj", "min", "ino", "inoGeneration", "prot", "flags", "filename"].map(
            (k) => hex(f[k]),
          ),
        ].join(", "),
        verbose: labelled(
          ["pid", "pid"],
          ["tid", "tid"],
          ["addr", "addr"],
          ["len", "len"],
          ["pgoff", "pgoff"],
          ["maj", "maj"],
          ["min", "min"],
          ["ino", "ino"],
          ["ino_generation", "inoGeneration"],
          ["prot", "prot"],
          ["flags", "flags"],
          ["filename", "filename"],
        ),
      };
    case RecordType.Lost:
      return {
        name: "PERF_RECORD_LOST",
        compact: `${hex(f.id)}, ${hex(f.lost)}`,
        verbose: labelled(["id", "id"], ["lost", "lost"]),
      };
    case RecordType.Comm:
      return {
        name: `PERF_RECORD_COMM${rec.misc & Misc.CommExec ? ".EXEC" : ""}`,
        compact: `${pair("pid", "tid")}, ${f.comm}`,
        verbose: labelled(["pid", "pid"], ["tid", "tid"], ["comm", "comm"]),
      };
    case RecordType.Exit:
    case RecordType.Fork:
      return {
        name: rec.type === RecordType.Exit ? "PERF_RECORD_EXIT" : "PERF_RECORD_FORK",
        compact: `${pair("pid", "tid")}, ${pair("ppid", "ptid")}, ${hex(f.time)}`,
        verbose: labelled(
          ["pid", "pid"],
          ["ppid", "ppid"],
          ["tid", "tid"],
          ["ptid", "ptid"],
          ["time", "time"],
        ),
      };
    case RecordType.Throttle:
    case RecordType.Unthrottle:
      return {
        name: rec.type === RecordType.Throttle ? "PERF_RECORD_THROTTLE" : "PERF_RECORD_UNTHROTTLE",
        compact: `${hex(f.time)}, ${hex(f.id)}, ${hex(f.streamId)}`,
        verbose: labelled(["time", "time"], ["id", "id"], ["stream_id", "streamId"]),
      };
    case RecordType.Aux:
      return {
        name: `PERF_RECORD_AUX${BigInt(f.flags ?? 0) & BigInt(AuxFlag.Truncated) ? ".TRUNCATED" : ""}`,
        compact: `${hex(f.auxOffset)}, ${hex(f.auxSize)}, ${hex(f.flags)}`,
        verbose: labelled(["aux offset", "auxOffset"], ["aux size", "auxSize"], ["flags", "flags"]),
      };
    case RecordType.ItraceStart:
      return {
        name: "PERF_RECORD_ITRACE_START",
        compact: pair("pid", "tid"),
        verbose: labelled(["pid", "pid"], ["tid", "tid"]),
      };
    case RecordType.LostSamples:
      return { name: "PERF_RECORD_LOST_SAMPLES", compact: hex(f.lost), verbose: labelled(["lost", "lost"]) };
    case RecordType.Switch:
      return {
        name: `PERF_RECORD_SWITCH.${rec.misc & Misc.SwitchOut ? "OUT" : "IN"}`,
        compact: "",
        verbose: [],
      };
    case RecordType.SwitchCpuWide: {
      const out = (rec.misc & Misc.SwitchOut) !== 0;
      const who = out ? "next" : "prev";
      return {
        name: `PERF_RECORD_SWITCH_CPU_WIDE.${out ? "OUT" : "IN"}`,
        compact: pair("nextPrevPid", "nextPrevTid"),
        verbose: labelled([`${who} pid`, "nextPrevPid"], [`${who} tid`, "nextPrevTid"]),
      };
    }
  }
  return {
    name: "UNKNOWN",
    compact: `(${hex(rec.type)}, ${hex(rec.misc)})`,
    verbose: [
      ["type", hex(rec.type)],
      ["misc", hex(rec.misc)],
    ],
  };
}

function samplesCompact(s: PeventSamples): string {
  let t = "  {";
  if (s.pid !== undefined && s.tid !== undefined) t += ` ${hex(s.pid)}/${hex(s.tid)}`;
  if (s.time !== undefined) t += ` ${hex(s.time)}`;
  if (s.id !== undefined) t += ` ${hex(s.id)}`;
  if (s.cpu !== undefined) t += ` cpu-${hex(s.cpu)}`;
  if (s.streamId !== undefined) t += ` ${hex(s.streamId)}`;
  if (s.identifier !== undefined) t += ` ${hex(s.identifier)}`;
  return `${t} }`;
}

function samplesVerbose(s: PeventSamples): Array<[string, string]> {
  const lines: Array<[string, string]> = [];
  if (s.pid !== undefined && s.tid !== undefined) lines.push(["pid", hex(s.pid)], ["tid", hex(s.tid)]);
  if (s.time !== undefined) lines.push(["time", hex(s.time)]);
  if (s.id !== undefined) lines.push(["id", hex(s.id)]);
  if (s.cpu !== undefined) lines.push(["cpu", hex(s.cpu)]);
  if (s.streamId !== undefined) lines.push(["stream id", hex(s.streamId)]);
  if (s.identifier !== undefined) lines.push(["identifier", hex(s.identifier)]);
  return lines;
}

/** The record in `format` (without the filename, offset and time libipt may put first). */
export function sidebandRecordText(rec: PeventRecord, format: SidebandFormat): string {
  const d = describe(rec);
  if (format === SidebandFormat.Compact) {
    const name = rec.type === RecordType.Switch || !d.compact ? d.name : `${d.name}  ${d.compact}`;
    return name + samplesCompact(rec.samples);
  }
  return [d.name, ...[...d.verbose, ...samplesVerbose(rec.samples)].map(([k, v]) => `  ${k}: ${v}`)].join(
    "\n",
  );
}
