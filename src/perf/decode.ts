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

/** Decode the fields of `rec` (the sample_id trailer is not included: see PerfDataReader.sampleId). */
export function decodeRecord(rec: PerfRecord): DecodedRecord {
  const c = new FieldCursor(rec.bytes, 8, rec.size);
  const f: Record<string, FieldValue> = {};
  const pidTid = () => {
    f.pid = c.s32();
    f.tid = c.s32();
  };
  switch (rec.type) {
    case RecordType.Mmap:
      pidTid();
      f.addr = c.u64();
      f.len = c.u64();
      f.pgoff = c.u64();
      f.filename = c.restString();
      break;
    case RecordType.Mmap2: {
      pidTid();
      f.addr = c.u64();
      f.len = c.u64();
      f.pgoff = c.u64();
      if (rec.misc & Misc.MmapBuildId) {
        const size = Math.min(c.u8(), 20);
        c.skip(3);
        f.buildId = hexBytes(c.bytes(20).subarray(0, size));
      } else {
        f.maj = c.u32();
        f.min = c.u32();
        f.ino = c.u64();
        f.inoGeneration = c.u64();
      }
      f.prot = c.u32();
      f.flags = c.u32();
      f.filename = c.restString();
      break;
    }
    case RecordType.Comm:
      pidTid();
      f.comm = c.restString();
      f.exec = (rec.misc & Misc.CommExec) !== 0;
      break;
    case RecordType.Exit:
    case RecordType.Fork:
      f.pid = c.s32();
      f.ppid = c.s32();
      f.tid = c.s32();
      f.ptid = c.s32();
      f.time = c.u64();
      break;
    case RecordType.Lost:
      f.id = c.u64n();
      f.lost = c.u64n();
      break;
    case RecordType.Throttle:
    case RecordType.Unthrottle:
      f.time = c.u64();
      f.id = c.u64n();
      f.streamId = c.u64n();
      break;
    case RecordType.Aux: {
      f.auxOffset = c.u64n();
      f.auxSize = c.u64n();
      const flags = c.u64n();
      f.flags = flags;
      f.flagNames = auxFlagNames(flags);
      break;
    }
    case RecordType.ItraceStart:
      pidTid();
      break;
    case RecordType.LostSamples:
      f.lost = c.u64n();
      break;
    case RecordType.Switch:
    case RecordType.SwitchCpuWide:
      if (rec.type === RecordType.SwitchCpuWide) {
        f.nextPrevPid = c.s32();
        f.nextPrevTid = c.s32();
      }
      f.out = (rec.misc & Misc.SwitchOut) !== 0;
      f.preempt = (rec.misc & Misc.SwitchOutPreempt) !== 0;
      break;
    case RecordType.Ksymbol:
      f.addr = c.u64();
      f.len = c.u32();
      f.ksymType = c.u16();
      f.flags = c.u16();
      f.name = c.restString();
      break;
    case RecordType.BpfEvent:
      f.type = c.u16();
      f.flags = c.u16();
      f.id = c.u32();
      f.tag = hexBytes(c.bytes(8));
      break;
    case RecordType.Cgroup:
      f.id = c.u64();
      f.path = c.restString();
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
    case RecordType.AuxOutputHwId:
      f.hwId = c.u64();
      break;
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
