/**
 * Feature sections (tools/perf/util/header.c; Documentation/perf.data-file-format.txt):
 * in a file, a table of {offset, size} after the data section, one per bit set in
 * the header's feature bitmap; in a pipe, HEADER_FEATURE records with the same body.
 */
import { type PerfEventAttr, parseAttr } from "./attr.js";
import { hexBytes } from "./bytes.js";
import { FieldCursor } from "./cursor.js";
import { Misc } from "./types.js";

/** One HEADER_BUILD_ID entry. */
export interface BuildIdEntry {
  pid: number;
  buildId: string;
  filename: string;
  /** The cpu mode of the object (misc & 7: 1 kernel, 2 user, 4/5 guest). */
  cpuMode: number;
}

/** What the feature sections say; absent fields were not recorded or could not be read. */
export interface PerfFeatures {
  hostname?: string;
  osrelease?: string;
  version?: string;
  arch?: string;
  nrcpus?: { available: number; online: number };
  cpudesc?: string;
  /** e.g. `GenuineIntel,6,94,3`. */
  cpuid?: string;
  totalMemKiB?: number;
  cmdline?: string[];
  buildIds?: BuildIdEntry[];
  /** The auxtrace index: where the AUXTRACE records are (file offset and record size). */
  auxtraceIndex?: Array<{ offset: number; size: number }>;
  eventDesc?: Array<{ attr: PerfEventAttr; name: string; ids: number[] }>;
  pmuMappings?: Array<{ type: number; name: string }>;
  groupDesc?: Array<{ name: string; leader: number; members: number }>;
  sampleTime?: { first: bigint; last: bigint };
  clockidResNs?: bigint;
  compressed?: { version: number; type: number; level: number; ratio: number; mmapLen: number };
  clockData?: { version: number; clockid: number; wallClockNs: bigint; clockidTimeNs: bigint };
  /** Every section seen: id, where, how big. */
  sections: Array<{ id: number; offset: number; size: number }>;
}

/** Parse HEADER_BUILD_ID entries (records with a perf_event_header) from `c`. */
export function parseBuildIds(c: FieldCursor): BuildIdEntry[] {
  const out: BuildIdEntry[] = [];
  while (c.left >= 8) {
    const start = c.pos;
    c.u32();
    const misc = c.u16();
    const size = c.u16();
    if (size < 8 + 4 + 24 || start + size > c.end) break;
    const pid = c.s32();
    const raw = c.bytes(24);
    // With BuildIdSize the length is in byte 20 of the field; older files pad 20-byte SHA-1s.
    const len = misc & Misc.BuildIdSize ? Math.min(raw[20]!, 20) : 20;
    const body = new FieldCursor(c.b, c.pos, start + size);
    out.push({
      pid,
      buildId: hexBytes(raw.subarray(0, len)),
      filename: body.restString(),
      cpuMode: misc & 7,
    });
    c.pos = start + size;
  }
  return out;
}

/**
 * Parse one feature section body `b[p, end)` into `into`. False when the body is
 * shorter than its contents say (what could be read is kept).
 */
export function parseFeature(id: number, b: Uint8Array, p: number, end: number, into: PerfFeatures): boolean {
  const c = new FieldCursor(b, p, end);
  switch (id) {
    case 2:
      into.buildIds = parseBuildIds(c);
      break;
    case 3:
      into.hostname = c.lenString();
      break;
    case 4:
      into.osrelease = c.lenString();
      break;
    case 5:
      into.version = c.lenString();
      break;
    case 6:
      into.arch = c.lenString();
      break;
    case 7:
      into.nrcpus = { available: c.u32(), online: c.u32() };
      break;
    case 8:
      into.cpudesc = c.lenString();
      break;
    case 9:
      into.cpuid = c.lenString();
      break;
    case 10:
      into.totalMemKiB = c.u64n();
      break;
    case 11: {
      const n = c.u32();
      into.cmdline = [];
      for (let i = 0; i < n && c.ok; i++) into.cmdline.push(c.lenString());
      break;
    }
    case 12:
      into.eventDesc = parseEventDesc(c);
      break;
    case 16: {
      const n = c.u32();
      into.pmuMappings = [];
      for (let i = 0; i < n && c.ok; i++) into.pmuMappings.push({ type: c.u32(), name: c.lenString() });
      break;
    }
    case 17: {
      const n = c.u32();
      into.groupDesc = [];
      for (let i = 0; i < n && c.ok; i++) {
        into.groupDesc.push({ name: c.lenString(), leader: c.u32(), members: c.u32() });
      }
      break;
    }
    case 18: {
      const n = c.u64n();
      into.auxtraceIndex = [];
      for (let i = 0; i < n && c.left >= 16; i++)
        into.auxtraceIndex.push({ offset: c.u64n(), size: c.u64n() });
      if (into.auxtraceIndex.length < n) c.ok = false;
      break;
    }
    case 21:
      into.sampleTime = { first: c.u64(), last: c.u64() };
      break;
    case 23:
      into.clockidResNs = c.u64();
      break;
    case 27:
      into.compressed = { version: c.u32(), type: c.u32(), level: c.u32(), ratio: c.u32(), mmapLen: c.u32() };
      break;
    case 29:
      into.clockData = { version: c.u32(), clockid: c.u32(), wallClockNs: c.u64(), clockidTimeNs: c.u64() };
      break;
    default:
      return true; // kept as a section only
  }
  return c.ok;
}

function parseEventDesc(c: FieldCursor): PerfFeatures["eventDesc"] {
  const out: NonNullable<PerfFeatures["eventDesc"]> = [];
  const nre = c.u32();
  const sz = c.u32();
  for (let i = 0; i < nre && c.ok; i++) {
    const at = c.pos;
    c.skip(sz);
    const attr = c.ok ? parseAttr(c.b, at, sz) : undefined;
    const nr = c.u32();
    const name = c.lenString();
    const ids: number[] = [];
    for (let k = 0; k < nr && c.left >= 8; k++) ids.push(c.u64n());
    if (attr === undefined || ids.length < nr) {
      c.ok = false;
      break;
    }
    out.push({ attr, name, ids });
  }
  return out;
}

/** The features that are parsed (and so read); the others are only listed. */
export function isParsedFeature(id: number): boolean {
  return (
    (id >= 2 && id <= 12) ||
    id === 16 ||
    id === 17 ||
    id === 18 ||
    id === 21 ||
    id === 23 ||
    id === 27 ||
    id === 29
  );
}
