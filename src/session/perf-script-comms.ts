/**
 * Thread names over time, as perf script's comm field shows them: each thread's
 * COMM records (an exec renames it from then on), else its process's, else the
 * parent's a fork copied, else perf's `:tid`.
 */
import { decodeRecord, type PerfDataReader, type PerfRecord, RecordType, SampleId } from "../perf/index.js";

export class ScriptComms {
  /** Per tid: perf times (ns) and names, in file order. */
  private readonly byTid = new Map<number, Array<{ time: number; name: string }>>();
  private readonly parents = new Map<number, number>();
  private readonly id = new SampleId();

  /** Take a COMM or FORK record (others are ignored). */
  record(rec: PerfRecord, reader: PerfDataReader): void {
    if (rec.type !== RecordType.Comm && rec.type !== RecordType.Fork) return;
    const { fields, problem } = decodeRecord(rec);
    if (problem) return;
    if (rec.type === RecordType.Fork) {
      if (fields.pid !== fields.ppid) this.parents.set(fields.pid as number, fields.ppid as number);
      return;
    }
    const time = reader.sampleId(rec, this.id) ? this.id.timeHi * 2 ** 32 + this.id.timeLo : 0;
    const tid = fields.tid as number;
    let list = this.byTid.get(tid);
    if (list === undefined) {
      list = [];
      this.byTid.set(tid, list);
    }
    list.push({ time, name: fields.comm as string });
  }

  /** The name of thread tid (of process pid) at perf time `time` (ns). */
  name(pid: number, tid: number, time: number): string {
    const own = this.at(tid, time) ?? this.at(pid, time);
    if (own !== undefined) return own;
    const parent = this.parents.get(pid);
    return (parent === undefined ? undefined : this.at(parent, time)) ?? `:${tid}`;
  }

  private at(tid: number, time: number): string | undefined {
    const list = this.byTid.get(tid);
    if (list === undefined) return undefined;
    let name = list[0]!.name;
    for (const c of list) if (c.time <= time) name = c.name;
    return name;
  }
}
