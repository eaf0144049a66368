/**
 * perf.data constants, as the Linux kernel's include/uapi/linux/perf_event.h and
 * tools/perf/util/event.h and header.h define them.
 */

/** PERF_RECORD_* (kernel, < 64) and perf's own user record types (>= 64). */
export const RecordType = {
  Mmap: 1,
  Lost: 2,
  Comm: 3,
  Exit: 4,
  Throttle: 5,
  Unthrottle: 6,
  Fork: 7,
  Read: 8,
  Sample: 9,
  Mmap2: 10,
  Aux: 11,
  ItraceStart: 12,
  LostSamples: 13,
  Switch: 14,
  SwitchCpuWide: 15,
  Namespaces: 16,
  Ksymbol: 17,
  BpfEvent: 18,
  Cgroup: 19,
  TextPoke: 20,
  AuxOutputHwId: 21,
  HeaderAttr: 64,
  HeaderEventType: 65,
  HeaderTracingData: 66,
  HeaderBuildId: 67,
  FinishedRound: 68,
  IdIndex: 69,
  AuxtraceInfo: 70,
  Auxtrace: 71,
  AuxtraceError: 72,
  ThreadMap: 73,
  CpuMap: 74,
  StatConfig: 75,
  Stat: 76,
  StatRound: 77,
  EventUpdate: 78,
  TimeConv: 79,
  HeaderFeature: 80,
  Compressed: 81,
  FinishedInit: 82,
  Compressed2: 83,
} as const;
export type RecordType = (typeof RecordType)[keyof typeof RecordType];

/** The first user (perf-tool) record type: these never carry a sample_id trailer. */
export const USER_RECORD_START = 64;

const RECORD_NAMES: Record<number, string> = {};
for (const [name, value] of Object.entries(RecordType)) {
  RECORD_NAMES[value] = name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase();
}

/** The PERF_RECORD_ name of a record type without the prefix (`MMAP2`), or `UNKNOWN(n)`. */
export function recordTypeName(type: number): string {
  return RECORD_NAMES[type] ?? `UNKNOWN(${type})`;
}

/** perf_event_header.misc bits. */
export const Misc = {
  CpuModeMask: 0x7,
  Kernel: 1,
  User: 2,
  Hypervisor: 3,
  GuestKernel: 4,
  GuestUser: 5,
  /** COMM: the process exec'ed; MMAP: data mapping; SWITCH: switch out (all bit 13). */
  CommExec: 1 << 13,
  MmapData: 1 << 13,
  SwitchOut: 1 << 13,
  /** SWITCH: the task was preempted (still runnable). */
  SwitchOutPreempt: 1 << 14,
  /** MMAP2 carries a build id instead of device and inode. */
  MmapBuildId: 1 << 14,
  /** HEADER_BUILD_ID carries the build id's size. */
  BuildIdSize: 1 << 15,
} as const;

/** perf_event_attr.sample_type bits (PERF_SAMPLE_*). */
export const SampleType = {
  Ip: 1 << 0,
  Tid: 1 << 1,
  Time: 1 << 2,
  Addr: 1 << 3,
  Read: 1 << 4,
  Callchain: 1 << 5,
  Id: 1 << 6,
  Cpu: 1 << 7,
  Period: 1 << 8,
  StreamId: 1 << 9,
  Raw: 1 << 10,
  Identifier: 1 << 16,
} as const;

/** PERF_AUX_FLAG_* in an AUX record. */
export const AuxFlag = {
  Truncated: 1,
  Overwrite: 2,
  Partial: 4,
  Collision: 8,
} as const;

/** Feature section ids (HEADER_*), the bit numbers of the file header's feature bitmap. */
export const FEATURE_NAMES: readonly string[] = [
  "reserved",
  "tracing_data",
  "build_id",
  "hostname",
  "osrelease",
  "version",
  "arch",
  "nrcpus",
  "cpudesc",
  "cpuid",
  "total_mem",
  "cmdline",
  "event_desc",
  "cpu_topology",
  "numa_topology",
  "branch_stack",
  "pmu_mappings",
  "group_desc",
  "auxtrace",
  "stat",
  "cache",
  "sample_time",
  "mem_topology",
  "clockid",
  "dir_format",
  "bpf_prog_info",
  "bpf_btf",
  "compressed",
  "cpu_pmu_caps",
  "clock_data",
  "hybrid_topology",
  "pmu_caps",
];

/** The name of a feature id, or `feature(n)`. */
export function featureName(id: number): string {
  return FEATURE_NAMES[id] ?? `feature(${id})`;
}
