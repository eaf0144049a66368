/**
 * What a perf.data file's sideband says about processes, for decoding its trace
 * like `perf script --itrace`: the address-space records (MMAP/MMAP2, COMM exec,
 * FORK, EXIT) in time order, and per CPU which thread runs from when (SWITCH,
 * SWITCH_CPU_WIDE and ITRACE_START with their sample_id), each with its TSC (perf
 * time converted back with TIME_CONV or AUXTRACE_INFO). One pass over the records;
 * BigInt per record, not per instruction.
 */
import { doubleFields, splitBigInt, toBigInt } from "../base/halves.js";
import { parseAuxtraceInfo } from "./auxtrace-info.js";
import { decodeRecord } from "./decode.js";
import type { PerfDiagnostic } from "./errors.js";
import type { PerfDataReader } from "./reader.js";
import { PerfRecord } from "./record.js";
import { SampleId } from "./sample-id.js";
import { perfTimeToTsc, type TscConversion, tscConversionProblem } from "./time-conv.js";
import { AuxFlag, Misc, RecordType } from "./types.js";

/** An address-space change of process `pid`. */
export type TaskChange =
  | { kind: "mmap"; pid: number; addr: bigint; len: bigint; pgoff: bigint; path: string; buildId?: string }
  | { kind: "exec"; pid: number }
  | { kind: "fork"; pid: number; ppid: number }
  | { kind: "exit"; pid: number };

/** A record with its times: `time` (perf ns, 0 when the record has none) and its TSC as halves. */
export type Timed<T> = T & { time: bigint; tscHi: number; tscLo: number };

/** From this time on, CPU `cpu` runs thread `tid` of process `pid`. */
export interface CpuSwitch {
  cpu: number;
  pid: number;
  tid: number;
}

/** Trace or sideband lost on CPU `cpu` (-1: unknown): an AUX record flagged truncated or collision, or a LOST record. */
export interface TraceGap {
  cpu: number;
  what: string;
}

export interface PerfTasks {
  /** Address-space changes, in time order (file order among equal times). */
  changes: Timed<TaskChange>[];
  /** Thread switches (SWITCH, SWITCH_CPU_WIDE, ITRACE_START), in time order. */
  switches: Timed<CpuSwitch>[];
  /** Whether the file has SWITCH or SWITCH_CPU_WIDE records (recorded with context-switch events). */
  hasSwitchRecords: boolean;
  /**
   * Threads seen running: the sample_id (cpu, pid, tid, time) of each MMAP, MMAP2 and
   * COMM record the kernel wrote (the running thread causes them); in time order. Without switch
   * records they are the only other clue to who runs on a CPU.
   */
  seen: Timed<CpuSwitch>[];
  /** Losses, in time order. */
  gaps: Timed<TraceGap>[];
  /** The file's TSC conversion, if any. */
  conversion: TscConversion | undefined;
  /** Conversions not used because their parameters are corrupt (the record's offset, what and what instead). */
  problems: PerfDiagnostic[];
  /** Build ids by path, from the build_id feature and MMAP2 records that carry one. */
  buildIds: Map<string, string>;
}

/**
 * The TSC conversion a TIME_CONV record, or AUXTRACE_INFO's Intel PT words, give
 * (undefined for other records, or when too short); not checked: see
 * {@link tscConversionProblem}.
 */
export function recordConversion(rec: PerfRecord): TscConversion | undefined {
  if (rec.type === RecordType.TimeConv) {
    const { fields: f, problem } = decodeRecord(rec);
    if (problem) return undefined;
    const c: TscConversion = {
      timeShift: Number(f.timeShift),
      timeMult: BigInt(f.timeMult as number),
      timeZero: f.timeZero as bigint,
    };
    if (f.capUserTimeShort === true) {
      c.capUserTimeShort = true;
      c.timeCycles = f.timeCycles as bigint;
      c.timeMask = f.timeMask as bigint;
    }
    return c;
  }
  if (rec.type === RecordType.AuxtraceInfo) {
    const pt = parseAuxtraceInfo(rec.bytes)?.intelPt;
    if (pt?.timeMult === undefined) return undefined;
    return { timeShift: Number(pt.timeShift ?? 0n), timeMult: pt.timeMult, timeZero: pt.timeZero ?? 0n };
  }
  return undefined;
}

/**
 * The TSC conversion of a file: its TIME_CONV record, else AUXTRACE_INFO's Intel PT
 * words; one whose parameters are corrupt is not used, and said so in `problems`.
 */
function conversionOf(reader: PerfDataReader): {
  conversion: TscConversion | undefined;
  problems: PerfDiagnostic[];
} {
  const rec = new PerfRecord();
  let fromInfo: TscConversion | undefined;
  let fromTimeConv: TscConversion | undefined;
  const bad: Array<{ offset: number; record: string; problem: string }> = [];
  reader.rewind();
  while (reader.next(rec)) {
    const c = recordConversion(rec);
    if (c === undefined) continue;
    const timeConv = rec.type === RecordType.TimeConv;
    const problem = tscConversionProblem(c);
    if (problem !== undefined)
      bad.push({ offset: rec.offset, record: timeConv ? "TIME_CONV" : "AUXTRACE_INFO", problem });
    else if (timeConv) fromTimeConv = c;
    else fromInfo = c;
  }
  reader.rewind();
  const conversion = fromTimeConv ?? fromInfo;
  const instead =
    conversion === undefined
      ? "decoding without TSC conversion (sideband times unknown: threads and mmaps may be placed wrongly; no perf times)"
      : `using ${conversion === fromTimeConv ? "TIME_CONV" : "AUXTRACE_INFO"}'s TSC conversion instead`;
  const problems = bad.map((b) => ({ offset: b.offset, message: `${b.record} ${b.problem}`, hint: instead }));
  return { conversion, problems };
}

/** Read the process sideband of a file (rewinds the reader before and after). */
export function readTasks(reader: PerfDataReader): PerfTasks {
  const { conversion, problems } = conversionOf(reader);
  const changes: Timed<TaskChange>[] = [];
  const switches: Timed<CpuSwitch>[] = [];
  const gaps: Timed<TraceGap>[] = [];
  const seen: Timed<CpuSwitch>[] = [];
  let hasSwitchRecords = false;
  const buildIds = new Map<string, string>();
  for (const b of reader.features.buildIds ?? []) buildIds.set(b.filename, b.buildId);
  const rec = new PerfRecord();
  const sid = new SampleId();
  const timed = <T>(v: T): Timed<T> => {
    const time = sid.present ? toBigInt(sid.timeHi, sid.timeLo) : 0n;
    const tsc = conversion && time !== 0n ? (perfTimeToTsc(time, conversion) ?? 0n) : 0n;
    const { hi, lo } = splitBigInt(tsc, { hi: 0, lo: 0 });
    const t = { ...v, time, tscHi: 0, tscLo: 0 };
    // TSC halves, most past 2^31: doubles in every record of a kind (one record of
    // small halves first made the rest change shape while the decode read them).
    doubleFields(t, ["tscHi", "tscLo"]);
    t.tscHi = hi;
    t.tscLo = lo;
    return t;
  };
  while (reader.next(rec)) {
    const t = rec.type;
    if (
      t !== RecordType.Mmap &&
      t !== RecordType.Mmap2 &&
      t !== RecordType.Comm &&
      t !== RecordType.Fork &&
      t !== RecordType.Exit &&
      t !== RecordType.Switch &&
      t !== RecordType.SwitchCpuWide &&
      t !== RecordType.ItraceStart &&
      t !== RecordType.Aux &&
      t !== RecordType.Lost
    )
      continue;
    const { fields: f, problem } = decodeRecord(rec);
    if (problem) continue;
    reader.sampleId(rec, sid);
    const pid = f.pid as number;
    if (t === RecordType.Switch || t === RecordType.SwitchCpuWide) hasSwitchRecords = true;
    if (
      (t === RecordType.Mmap || t === RecordType.Mmap2 || t === RecordType.Comm) &&
      sid.cpu >= 0 &&
      sid.pid >= 0 &&
      // Records perf synthesizes for what ran before recording have a zeroed sample_id.
      (sid.timeHi !== 0 || sid.timeLo !== 0)
    )
      seen.push(timed({ cpu: sid.cpu, pid: sid.pid, tid: sid.tid }));
    if (t === RecordType.Mmap || t === RecordType.Mmap2) {
      const path = f.filename as string;
      const buildId = f.buildId as string | undefined;
      if (buildId) buildIds.set(path, buildId);
      changes.push(
        timed({
          kind: "mmap",
          pid,
          addr: f.addr as bigint,
          len: f.len as bigint,
          pgoff: f.pgoff as bigint,
          path,
        }),
      );
    } else if (t === RecordType.Comm) {
      if (rec.misc & Misc.CommExec) changes.push(timed({ kind: "exec", pid }));
    } else if (t === RecordType.Fork) {
      if (pid !== f.ppid) changes.push(timed({ kind: "fork", pid, ppid: f.ppid as number }));
    } else if (t === RecordType.Exit) {
      if (pid === f.tid) changes.push(timed({ kind: "exit", pid }));
    } else if (t === RecordType.Aux) {
      const flags = f.flags as number;
      if (flags & (AuxFlag.Truncated | AuxFlag.Collision)) {
        const at = `aux offset 0x${(f.auxOffset as number).toString(16)}`;
        gaps.push(
          timed({
            cpu: sid.cpu,
            what: `trace lost: AUX ${f.flagNames} at ${at} (record at 0x${rec.offset.toString(16)})`,
          }),
        );
      }
    } else if (t === RecordType.Lost) {
      gaps.push(
        timed({
          cpu: sid.cpu,
          what: `${f.lost} sideband records lost (record at 0x${rec.offset.toString(16)})`,
        }),
      );
    } else if (sid.cpu >= 0) {
      const next = cpuSwitch(t, rec.misc, f, sid);
      if (next) switches.push(timed(next));
    }
  }
  reader.rewind();
  const byTime = (a: Timed<unknown>, b: Timed<unknown>) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0);
  changes.sort(byTime);
  switches.sort(byTime);
  gaps.sort(byTime);
  seen.sort(byTime);
  return { changes, switches, hasSwitchRecords, seen, gaps, conversion, problems, buildIds };
}

/** The thread a switch record says runs next on its CPU, if it says. */
function cpuSwitch(
  type: number,
  misc: number,
  f: Record<string, unknown>,
  sid: SampleId,
): CpuSwitch | undefined {
  const out = (misc & Misc.SwitchOut) !== 0;
  if (type === RecordType.ItraceStart) return { cpu: sid.cpu, pid: f.pid as number, tid: f.tid as number };
  if (type === RecordType.SwitchCpuWide) {
    // Switching out names the next task; switching in, the one before (the sample_id is the new one).
    if (out) return { cpu: sid.cpu, pid: f.nextPrevPid as number, tid: f.nextPrevTid as number };
    return { cpu: sid.cpu, pid: sid.pid, tid: sid.tid };
  }
  return out ? undefined : { cpu: sid.cpu, pid: sid.pid, tid: sid.tid };
}
