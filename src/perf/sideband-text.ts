/**
 * libipt's text for a pevent sideband record: compact (one line, the record's fields
 * then its samples in braces) or verbose (the record's name, then one `  name: value`
 * line per field and sample). Numbers are hex without prefix, as libipt prints them.
 */
import { SidebandFormat } from "./sideband-format.js";
import { type PeventRecord, type PeventSamples, peventLayout } from "./sideband-record.js";
import { AuxFlag, Misc, RecordType, recordTypeName } from "./types.js";

export { SidebandFormat };

const hex = (v: number | bigint | string | undefined): string =>
  typeof v === "string" ? v : (v ?? 0).toString(16);

/** libipt's labels for the fields it names otherwise. */
const LABELS: Readonly<Record<string, string>> = {
  inoGeneration: "ino_generation",
  streamId: "stream_id",
  auxOffset: "aux offset",
  auxSize: "aux size",
};

/** Fields that the compact form shows as `first/second`, by first. */
const PAIRS: Readonly<Record<string, string>> = { pid: "tid", ppid: "ptid", nextPrevPid: "nextPrevTid" };
const SECONDS = new Set(Object.values(PAIRS));

/** The suffix of a record's name that its misc bits or flags give. */
function nameSuffix(rec: PeventRecord): string {
  switch (rec.type) {
    case RecordType.Comm:
      return rec.misc & Misc.CommExec ? ".EXEC" : "";
    case RecordType.Aux:
      return BigInt(rec.fields.flags ?? 0) & BigInt(AuxFlag.Truncated) ? ".TRUNCATED" : "";
    case RecordType.Switch:
    case RecordType.SwitchCpuWide:
      return rec.misc & Misc.SwitchOut ? ".OUT" : ".IN";
  }
  return "";
}

/** The record's name and its fields: compact values and verbose `label: value` pairs, in record order. */
function describe(rec: PeventRecord): { name: string; compact: string; verbose: Array<[string, string]> } {
  const layout = peventLayout(rec.type);
  if (!layout) {
    return {
      name: "UNKNOWN",
      compact: `(${hex(rec.type)}, ${hex(rec.misc)})`,
      verbose: [
        ["type", hex(rec.type)],
        ["misc", hex(rec.misc)],
      ],
    };
  }
  const f = rec.fields;
  const names = layout.fields.map(([name]) => name);
  if (layout.string) names.push(layout.string);
  // SWITCH_CPU_WIDE names the next task on a switch out, the previous one on a switch in.
  const who = rec.misc & Misc.SwitchOut ? "next" : "prev";
  const label = (name: string) =>
    name === "nextPrevPid" ? `${who} pid` : name === "nextPrevTid" ? `${who} tid` : (LABELS[name] ?? name);
  return {
    name: `PERF_RECORD_${recordTypeName(rec.type)}${nameSuffix(rec)}`,
    compact: names
      .filter((name) => !SECONDS.has(name))
      .map((name) => (PAIRS[name] ? `${hex(f[name])}/${hex(f[PAIRS[name]!])}` : hex(f[name])))
      .join(", "),
    verbose: names.map((name) => [label(name), hex(f[name])]),
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
    const name = d.compact ? `${d.name}  ${d.compact}` : d.name;
    return name + samplesCompact(rec.samples);
  }
  return [d.name, ...[...d.verbose, ...samplesVerbose(rec.samples)].map(([k, v]) => `  ${k}: ${v}`)].join(
    "\n",
  );
}
