/**
 * The fixed fields of the kernel's perf records (include/uapi/linux/perf_event.h), described
 * once for both readers of them: the perf.data reader's decodeRecord (decode.ts), lenient and
 * in perf's value forms, and the pevent sideband reader (sideband-record.ts), with libipt's
 * framing rules and value forms. Each reader keeps only how it reads a field of a kind.
 */
import { RecordType } from "./types.js";

/** How a field is stored, and how perf means it. */
export const FieldKind = {
  /** A u32 that perf shows signed (pids, tids: -1 means none). */
  S32: 0,
  U32: 1,
  U16: 2,
  /** A u64 kept exact (addresses, times, inodes). */
  U64: 3,
  /** A u64 that a Number holds exactly (offsets, sizes, ids, counts). */
  Count: 4,
} as const;
export type FieldKind = (typeof FieldKind)[keyof typeof FieldKind];

/** The bytes a field of each kind takes. */
export const FIELD_BYTES: Readonly<Record<FieldKind, number>> = [4, 4, 2, 8, 8];

/** A field: its name in decoded records, and its kind. */
export type FieldSpec = readonly [name: string, kind: FieldKind];

export interface RecordLayout {
  /** The fixed fields, in record order. */
  fields: readonly FieldSpec[];
  /** The name of the NUL-terminated string that follows them (padded to 8 bytes), if any. */
  string?: string;
}

const { S32, U32, U16, U64, Count } = FieldKind;

const PID_TID: readonly FieldSpec[] = [
  ["pid", S32],
  ["tid", S32],
];
const MMAP_RANGE: readonly FieldSpec[] = [...PID_TID, ["addr", U64], ["len", U64], ["pgoff", U64]];
const MMAP2_TAIL: readonly FieldSpec[] = [
  ["prot", U32],
  ["flags", U32],
];
const FORK_EXIT: RecordLayout = {
  fields: [
    ["pid", S32],
    ["ppid", S32],
    ["tid", S32],
    ["ptid", S32],
    ["time", U64],
  ],
};
const THROTTLE: RecordLayout = {
  fields: [
    ["time", U64],
    ["id", Count],
    ["streamId", Count],
  ],
};

/**
 * MMAP2 as perf writes it with PERF_RECORD_MISC_MMAP_BUILD_ID: the 24 bytes of device and
 * inode hold the build id instead (a size byte, 3 bytes of padding, 20 bytes of id), which
 * decodeRecord reads between these two field lists. libipt knows only the inode form.
 */
export const MMAP2_BUILD_ID = { before: MMAP_RANGE, after: MMAP2_TAIL } as const;

/**
 * The kernel records with fixed fields (and at most a string after them), by type.
 * libipt reads the ones up to SWITCH_CPU_WIDE.
 */
export const RECORD_LAYOUTS: Readonly<Partial<Record<number, RecordLayout>>> = {
  [RecordType.Mmap]: { fields: MMAP_RANGE, string: "filename" },
  [RecordType.Lost]: {
    fields: [
      ["id", Count],
      ["lost", Count],
    ],
  },
  [RecordType.Comm]: { fields: PID_TID, string: "comm" },
  [RecordType.Exit]: FORK_EXIT,
  [RecordType.Throttle]: THROTTLE,
  [RecordType.Unthrottle]: THROTTLE,
  [RecordType.Fork]: FORK_EXIT,
  [RecordType.Mmap2]: {
    fields: [...MMAP_RANGE, ["maj", U32], ["min", U32], ["ino", U64], ["inoGeneration", U64], ...MMAP2_TAIL],
    string: "filename",
  },
  [RecordType.Aux]: {
    fields: [
      ["auxOffset", Count],
      ["auxSize", Count],
      ["flags", Count],
    ],
  },
  [RecordType.ItraceStart]: { fields: PID_TID },
  [RecordType.LostSamples]: { fields: [["lost", Count]] },
  [RecordType.Switch]: { fields: [] },
  [RecordType.SwitchCpuWide]: {
    fields: [
      ["nextPrevPid", S32],
      ["nextPrevTid", S32],
    ],
  },
  [RecordType.Ksymbol]: {
    fields: [
      ["addr", U64],
      ["len", U32],
      ["ksymType", U16],
      ["flags", U16],
    ],
    string: "name",
  },
  [RecordType.Cgroup]: { fields: [["id", U64]], string: "path" },
  [RecordType.AuxOutputHwId]: { fields: [["hwId", U64]] },
};
