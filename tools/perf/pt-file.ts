/**
 * perf.data files with an Intel PT trace in them, as `perf record -e intel_pt//`
 * writes them, for tests and benchmarks: the sideband (COMM exec, MMAP2,
 * ITRACE_START), AUXTRACE_INFO and the trace in AUXTRACE records. perf time equals
 * the TSC (TIME_CONV shift 0, mult 1, zero 0), so record times are TSCs.
 */
import {
  type ElfLayout,
  ET_EXEC,
  PF_R,
  PF_X,
  PT_LOAD,
  SHT_PROGBITS,
  SHT_STRTAB,
  writeElf,
} from "../elf/elf-writer.js";
import { attrBytes, auxtrace, type Built, concat, Le, record } from "./perf-data-writer.js";

export const PT_SAMPLE_TYPE = 0x10086; // TID | TIME | CPU | IDENTIFIER
export const DUMMY_SAMPLE_TYPE = 0x10087; // the same, and IP

/** The sample_id trailer of PT_SAMPLE_TYPE. */
export function trailer(pid: number, tid: number, time: bigint, cpu: number, id: number): Uint8Array {
  return new Le().u32(pid).u32(tid).u64(time).u32(cpu).u32(0).u64(id).done();
}

/** The generator's TSC at the start of the trace. */
export const TRACE_TSC = 0x1000000000n;
const PT_ID = 10;

/** The sample_type of {@link PtFile.otherEvent}'s events: IDENTIFIER | IP | TID | TIME | CPU | PERIOD. */
export const OTHER_SAMPLE_TYPE = 0x10187;
/** PERF_SAMPLE_CALLCHAIN (with `callchain`). */
const SAMPLE_CALLCHAIN = 0x20;

/** perf's PERF_CONTEXT_USER callchain marker. */
export const CONTEXT_USER = 0xfffffffffffffe00n;

/** An event besides Intel PT's (perf record -e intel_pt// -e cpu-clock), and its name in event_desc. */
interface OtherEvent {
  name: string;
  type: number;
  config: bigint;
  id: number;
  callchain: boolean;
}

/** Builds the records of a perf.data file recorded with -e intel_pt//. */
export class PtFile {
  readonly records: Uint8Array[] = [];
  private readonly others: OtherEvent[] = [];
  readonly features = new Map<number, Uint8Array>([[9, new Le().lenStr("GenuineIntel,6,94,3").done()]]);

  /**
   * `perfScript`: also what Linux perf needs to decode the file (`perf script
   * --itrace`): IP in the PT event's sample_type (perf checks it for -F ip,addr) and
   * a HEADER_AUXTRACE feature (an empty index: perf then finds the AUXTRACE records
   * itself), without which perf refuses the fields or decodes nothing. `config`: more
   * bits of the intel_pt event's config (perf's format: pwr_evt 1<<4, ptw 1<<12, ...;
   * perf synthesizes power and ptwrite events only when the event asked for them).
   * `schedSwitch`: the info's have_sched_switch word (perf record's: 3 for CPU-wide
   * context switch events; default 0, none).
   */
  constructor(
    private readonly options: { perfScript?: boolean; config?: bigint; schedSwitch?: number } = {},
  ) {
    if (options.perfScript) this.features.set(18, new Le().u64(0).done());
    // AUXTRACE_INFO: the 17 Intel PT words (pmu 8, TSC bit 10, have_sched_switch,
    // per-CPU mmaps 1, MTC bit 9 with period bits 14-17, CYC bit 1, TSC:CTC 308/2,
    // nominal ratio 37), then TIME_CONV.
    const switches = BigInt(options.schedSwitch ?? 0);
    const words = [8n, 0n, 1n, 0n, 1n, 1n << 10n, 1n << 11n, switches, 0n, 1n, 1n << 9n, 0xfn << 14n];
    const info = new Le().u32(1).u32(0);
    for (const w of [...words, 308n, 2n, 1n << 1n, 37n, 0n]) info.u64(w);
    this.records.push(record(70, 0, info));
    this.records.push(record(79, 0, new Le().u64(0).u64(1).u64(0)));
  }

  private t(pid: number, tid: number, time: bigint, cpu: number): Uint8Array {
    return trailer(pid, tid, time, cpu, PT_ID);
  }

  comm(pid: number, name: string, time: bigint, cpu = 0): this {
    const body = new Le()
      .u32(pid)
      .u32(pid)
      .str(name)
      .raw(this.t(pid, pid, time, cpu));
    this.records.push(record(3, 1 << 13, body));
    return this;
  }

  /** MMAP2 of `path` (with a build id when given) in process pid. */
  mmap2(
    pid: number,
    addr: bigint,
    len: bigint,
    pgoff: bigint,
    path: string,
    time: bigint,
    buildId?: string,
  ): this {
    const body = new Le().u32(pid).u32(pid).u64(addr).u64(len).u64(pgoff);
    if (buildId) {
      // PERF_RECORD_MISC_MMAP_BUILD_ID: the id's size, 3 reserved bytes, 20 bytes of id
      // (a shorter id zero-padded), where the device and inode numbers would be.
      const id = Buffer.from(buildId, "hex");
      if (id.length > 20) throw new Error(`build id ${buildId}: more than 20 bytes`);
      body
        .u8(id.length)
        .u8(0)
        .u16(0)
        .raw(id)
        .raw(new Uint8Array(20 - id.length));
    } else body.u32(8).u32(1).u64(1234).u64(0);
    body
      .u32(5)
      .u32(2)
      .str(path)
      .raw(this.t(pid, pid, time, 0));
    this.records.push(record(10, buildId ? 1 << 14 : 0, body));
    return this;
  }

  /** The kernel's MMAP as perf synthesizes it: pid -1, misc KERNEL, pgoff the runtime address of the reference symbol. */
  kernelMmap(name: string, start: bigint, len: bigint, pgoff: bigint): this {
    const body = new Le().u32(-1).u32(0).u64(start).u64(len).u64(pgoff).str(name);
    body.raw(this.t(-1, 0, 0n, 0));
    this.records.push(record(1, 1, body));
    return this;
  }

  itraceStart(pid: number, tid: number, time: bigint, cpu = 0): this {
    this.records.push(
      record(
        12,
        0,
        new Le()
          .u32(pid)
          .u32(tid)
          .raw(this.t(pid, tid, time, cpu)),
      ),
    );
    return this;
  }

  /**
   * Another event (PERF_TYPE_* `type`, `config`), named `name` as perf names it (an
   * event_desc feature then names every event; the Intel PT one `intel_pt//`); its
   * samples have OTHER_SAMPLE_TYPE, and a callchain with `callchain`. Returns its id.
   */
  otherEvent(name: string, type: number, config = 0n, callchain = false): number {
    const id = PT_ID + 1 + this.others.length;
    this.others.push({ name, type, config, id, callchain });
    return id;
  }

  /** A SAMPLE of the other event `id` at `time` (a TSC), at `ip`; `chain`: its callchain entries. */
  sample(
    id: number,
    pid: number,
    tid: number,
    time: bigint,
    cpu: number,
    ip: bigint,
    period: bigint,
    chain: bigint[] = [],
  ): this {
    const body = new Le().u64(id).u64(ip).u32(pid).u32(tid).u64(time).u32(cpu).u32(0).u64(period);
    if (this.others.find((e) => e.id === id)?.callchain) {
      body.u64(chain.length);
      for (const c of chain) body.u64(c);
    }
    this.records.push(record(9, 2, body));
    return this;
  }

  /**
   * The trace of one CPU, split into AUXTRACE records of at most `chunk` bytes;
   * `reference`: the records' TSC reference (perf takes a buffer's first TSC's bits
   * above the packet's 56 from it).
   */
  trace(bytes: Uint8Array, cpu = 0, chunk = bytes.length, offset = 0, reference?: bigint): this {
    for (let at = 0; at < bytes.length; at += chunk) {
      const part = bytes.subarray(at, Math.min(bytes.length, at + chunk));
      this.records.push(auxtrace(part, { offset: offset + at, idx: cpu, tid: -1, cpu, reference }));
    }
    return this;
  }

  built(): Built {
    const events = [
      {
        attr: {
          type: 8,
          config: (1n << 10n) | (1n << 9n) | (3n << 14n) | 2n | (this.options.config ?? 0n),
          sampleType: this.options.perfScript ? DUMMY_SAMPLE_TYPE : PT_SAMPLE_TYPE,
          sampleIdAll: true,
        },
        ids: [PT_ID],
      },
      ...this.others.map((e) => ({
        attr: {
          type: e.type,
          config: e.config,
          sampleType: OTHER_SAMPLE_TYPE | (e.callchain ? SAMPLE_CALLCHAIN : 0),
          sampleIdAll: true,
        },
        ids: [e.id],
      })),
    ];
    const features = new Map(this.features);
    if (this.others.length > 0) {
      // event_desc: nr, attr size, then each event's attr, id count, name and ids.
      const desc = new Le().u32(events.length).u32(112);
      events.forEach((e, i) => {
        desc
          .raw(attrBytes(e.attr))
          .u32(e.ids.length)
          .lenStr(i === 0 ? "intel_pt//" : this.others[i - 1]!.name);
        for (const id of e.ids) desc.u64(id);
      });
      features.set(12, desc.done());
    }
    return { events, records: [concat(this.records)], features };
  }
}

/**
 * An x86-64 ELF executable whose one PT_LOAD holds `code` at `text`, with a .text
 * section there and a .symtab of `symbols` (name, address; functions unless `label`).
 */
export function elfWithSymbols(
  text: bigint,
  code: Uint8Array,
  symbols: Array<{ name: string; value: bigint; size?: number; label?: boolean }>,
): Uint8Array {
  return elfWithSymbolsLayout(text, code, symbols).bytes;
}

/** elfWithSymbols's file and its layout (segOffsets[0]: the file offset of `code`). */
export function elfWithSymbolsLayout(
  text: bigint,
  code: Uint8Array,
  symbols: Array<{ name: string; value: bigint; size?: number; label?: boolean }>,
): ElfLayout {
  const names = new Le().u8(0);
  const symtab = new Le().raw(new Uint8Array(24));
  for (const s of symbols) {
    const at = names.length;
    names.raw(new TextEncoder().encode(s.name)).u8(0);
    // st_name, st_info (GLOBAL FUNC, or LOCAL NOTYPE for a label), st_other, st_shndx 1 (.text), value, size.
    symtab
      .u32(at)
      .u8(s.label ? 0 : 0x12)
      .u8(0)
      .u16(1)
      .u64(s.value)
      .u64(s.size ?? 0);
  }
  return writeElf({
    is64: true,
    le: true,
    type: ET_EXEC,
    machine: 62,
    entry: text,
    segments: [{ type: PT_LOAD, flags: PF_R | PF_X, vaddr: text, data: code, align: 0x1000n }],
    sections: [
      { name: ".text", type: SHT_PROGBITS, flags: 6n, addr: text, data: code },
      // sh_link: .strtab (section 3); sh_info: the first global; entries of 24 bytes
      // (perf divides by sh_entsize: 0 crashes it with SIGFPE).
      { name: ".symtab", type: 2, data: symtab.done(), link: 3, info: 1, entsize: 24n },
      { name: ".strtab", type: SHT_STRTAB, data: names.done() },
    ],
  });
}

/**
 * SWITCH_CPU_WIDE of process `pid` on `cpu` (out: process `other` runs next; in:
 * `other` ran before); `threads`: the threads, when not the processes' main threads.
 */
export function switchCpuWide(
  out: boolean,
  pid: number,
  other: number,
  time: bigint,
  cpu: number,
  threads: { tid?: number; otherTid?: number } = {},
): Uint8Array {
  return record(
    15,
    out ? 1 << 13 : 0,
    new Le()
      .u32(other)
      .u32(threads.otherTid ?? other)
      .raw(trailer(pid, threads.tid ?? pid, time, cpu, PT_ID)),
  );
}
