/**
 * The fields of each record type (include/uapi/linux/perf_event.h for kernel
 * records, tools/perf/util/event.h and perf/event.h for perf's own), as named
 * values for listings and tests. This allocates: hot paths read the bytes directly.
 */
import { parseAttr } from "./attr.js";
import { parseAuxtraceInfo } from "./auxtrace-info.js";
import { hexBytes } from "./bytes.js";
import { FieldCursor } from "./cursor.js";
import { parseBuildIds } from "./features.js";
import type { PerfRecord } from "./record.js";
import { FieldKind, type FieldSpec, MMAP2_BUILD_ID, RECORD_LAYOUTS } from "./record-layout.js";
import { AuxFlag, featureName, Misc, RecordType } from "./types.js";

/** The names of an AUX record's flags (PERF_AUX_FLAG_*), plus the PMU format type (bits 8-15) when set. */
export function auxFlagNames(flags: number): string {
  const names: string[] = [];
  if (flags & AuxFlag.Truncated) names.push("truncated");
  if (flags & AuxFlag.Overwrite) names.push("overwrite");
  if (flags & AuxFlag.Partial) names.push("partial");
  if (flags & AuxFlag.Collision) names.push("collision");
  const format = (flags >>> 8) & 0xff;
  if (format) names.push(`pmu-format=${format}`);
  return names.join(",");
}

export type FieldValue = number | bigint | string | boolean;

export interface DecodedRecord {
  fields: Record<string, FieldValue>;
  /** Set when the record is shorter than its fields. */
  problem?: string;
}

/** A field of `kind` from `c`, in perf's value form. */
function readField(c: FieldCursor, kind: FieldKind): FieldValue {
  switch (kind) {
    case FieldKind.S32:
      return c.s32();
    case FieldKind.U32:
      return c.u32();
    case FieldKind.U16:
      return c.u16();
    case FieldKind.U64:
      return c.u64();
    case FieldKind.Count:
      return c.u64n();
  }
}

/** Read `fields` from `c` into `f`. */
function readFields(c: FieldCursor, fields: readonly FieldSpec[], f: Record<string, FieldValue>): void {
  for (const [name, kind] of fields) f[name] = readField(c, kind);
}

/** Decode the fields of `rec` (the sample_id trailer is not included: see PerfDataReader.sampleId). */
export function decodeRecord(rec: PerfRecord): DecodedRecord {
  const c = new FieldCursor(rec.bytes, 8, rec.size);
  const f: Record<string, FieldValue> = {};
  const layout = RECORD_LAYOUTS[rec.type];
  if (rec.type === RecordType.Mmap2 && rec.misc & Misc.MmapBuildId) {
    readFields(c, MMAP2_BUILD_ID.before, f);
    const size = Math.min(c.u8(), 20);
    c.skip(3);
    f.buildId = hexBytes(c.bytes(20).subarray(0, size));
    readFields(c, MMAP2_BUILD_ID.after, f);
    f.filename = c.restString();
  } else if (layout) {
    readFields(c, layout.fields, f);
    if (layout.string) f[layout.string] = c.restString();
  }
  switch (rec.type) {
    case RecordType.Comm:
      f.exec = (rec.misc & Misc.CommExec) !== 0;
      break;
    case RecordType.Aux:
      f.flagNames = auxFlagNames(f.flags as number);
      break;
    case RecordType.Switch:
    case RecordType.SwitchCpuWide:
      f.out = (rec.misc & Misc.SwitchOut) !== 0;
      f.preempt = (rec.misc & Misc.SwitchOutPreempt) !== 0;
      break;
    case RecordType.BpfEvent:
      f.type = c.u16();
      f.flags = c.u16();
      f.id = c.u32();
      f.tag = hexBytes(c.bytes(8));
      break;
    case RecordType.TextPoke: {
      f.addr = c.u64();
      const oldLen = c.u16();
      const newLen = c.u16();
      f.oldLen = oldLen;
      f.newLen = newLen;
      f.oldBytes = hexBytes(c.bytes(oldLen));
      f.newBytes = hexBytes(c.bytes(newLen));
      break;
    }
    case RecordType.HeaderAttr: {
      const attr = parseAttr(rec.bytes, 8, rec.size - 8);
      if (!attr) return { fields: f, problem: "too short for an attribute" };
      f.type = attr.type;
      f.config = attr.config;
      f.sampleType = attr.sampleType;
      f.ids = Math.max(0, Math.floor((rec.size - 8 - (attr.size || 64)) / 8));
      break;
    }
    case RecordType.HeaderBuildId: {
      const [entry] = parseBuildIds(new FieldCursor(rec.bytes, 0, rec.size));
      if (!entry) return { fields: f, problem: "too short for a build id" };
      f.pid = entry.pid;
      f.buildId = entry.buildId;
      f.filename = entry.filename;
      break;
    }
    case RecordType.IdIndex: {
      const nr = c.u64n();
      f.nr = nr;
      if (nr * 32 > c.left) c.ok = false;
      break;
    }
    case RecordType.AuxtraceInfo: {
      const info = parseAuxtraceInfo(rec.bytes);
      if (!info) return { fields: f, problem: "too short" };
      f.type = info.typeName;
      f.priv = info.priv.length;
      break;
    }
    case RecordType.Auxtrace:
      f.size = c.u64n();
      f.offset = c.u64n();
      f.reference = c.u64();
      f.idx = c.u32();
      f.tid = c.s32();
      f.cpu = c.s32();
      break;
    case RecordType.AuxtraceError: {
      f.type = c.u32();
      f.code = c.u32();
      f.cpu = c.s32();
      f.pid = c.s32();
      f.tid = c.s32();
      const fmt = c.u32();
      f.fmt = fmt;
      f.ip = c.u64();
      if (fmt >= 1) f.time = c.u64();
      f.msg = c.fixedString(64);
      if (fmt >= 2) {
        f.machinePid = c.s32();
        f.vcpu = c.s32();
      }
      break;
    }
    case RecordType.TimeConv:
      f.timeShift = c.u64n();
      f.timeMult = c.u64n();
      f.timeZero = c.u64();
      // Since Linux 5.10 (perf's TIME_CONV grew with cap_user_time_short).
      if (c.left >= 24) {
        f.timeCycles = c.u64();
        f.timeMask = c.u64();
        f.capUserTimeZero = c.u8() !== 0;
        f.capUserTimeShort = c.u8() !== 0;
      }
      break;
    case RecordType.HeaderFeature: {
      const id = c.u64n();
      f.feature = featureName(id);
      break;
    }
    case RecordType.HeaderTracingData:
      f.size = c.u32();
      break;
    case RecordType.Compressed:
    case RecordType.Compressed2:
      f.bytes = rec.size - 8;
      break;
  }
  return c.ok
    ? { fields: f }
    : { fields: f, problem: `record of ${rec.size} bytes is too short for its fields` };
}
