/**
 * Synthetic perf.data files with a real Intel PT trace in them, for `ptkit perf`
 * tests: the trace comes from the packet generator (src/unit/gen) run over an
 * execution of a small program, the sideband (COMM exec, MMAP/MMAP2, ITRACE_START,
 * SWITCH_CPU_WIDE) and AUXTRACE_INFO are written as perf writes them. perf time
 * equals the TSC (TIME_CONV shift 0, mult 1, zero 0), so record times are TSCs.
 */

import { readExecJsonl } from "../../src/unit/exec/jsonl.js";
import { generate } from "../../src/unit/gen/index.js";
import {
  ET_EXEC,
  PF_R,
  PF_X,
  PT_LOAD,
  SHT_PROGBITS,
  SHT_STRTAB,
  writeElf,
} from "../../tools/elf/elf-writer.js";
import { BRANCHES, msrs } from "../unit/gen/helpers.js";
import { auxtrace, type Built, concat, Le, record } from "./build.js";
import { PT_SAMPLE_TYPE, trailer } from "./sample-file.js";

/** The generator's TSC at the start of the trace. */
export const TRACE_TSC = 0x1000000000n;
const PT_ID = 10;

/** One insn record of an execution in JSON Lines. */
export const insn = (ip: bigint, size: number, cls = "other") =>
  JSON.stringify({ k: "insn", ip: `0x${ip.toString(16)}`, size, class: cls });

/**
 * A counting loop at `base`: `mov ecx, n; l: call f; dec ecx; jnz l; hlt`, with
 * `f: ret` at base + 0x10; its code bytes and the execution of `n` turns.
 */
export function loopProgram(base: bigint, n: number): { code: Uint8Array; exec: string[] } {
  const code = new Uint8Array(0x11);
  code.set([0xb9, n & 0xff, (n >> 8) & 0xff, 0, 0], 0); // mov ecx, n
  code.set([0xe8, 0x06, 0, 0, 0], 5); // call base+0x10
  code.set([0xff, 0xc9], 0xa); // dec ecx
  code.set([0x75, 0xf7], 0xc); // jnz base+5
  code[0xe] = 0xf4; // hlt
  code[0x10] = 0xc3; // ret
  const exec = [insn(base, 5)];
  for (let i = 0; i < n; i++) {
    exec.push(insn(base + 5n, 5, "call"), insn(base + 0x10n, 1, "return"));
    exec.push(insn(base + 0xan, 2), insn(base + 0xcn, 2, "cond-branch"));
  }
  exec.push(JSON.stringify({ k: "end", ip: `0x${(base + 0xen).toString(16)}` }));
  return { code, exec };
}

/** The instruction addresses of `exec` (insn records only), as ptkit perf prints them. */
/**
 * Two programs and a kernel that switches between them by PIP alone (MOV CR3 in an
 * interrupt): A (`mov ecx, n; l: call f; dec ecx; jnz l; hlt; f: ret`), B (`l: dec
 * ecx; jnz l; hlt`) and the kernel (`mov cr3, rax; iretq`), each at its own base.
 */
export const SWITCH_KERNEL = 0xffffffff81000000n;
export const CODE_CALLS = Uint8Array.from([
  0xb9, 0, 0, 1, 0, 0xe8, 6, 0, 0, 0, 0xff, 0xc9, 0x75, 0xf7, 0xf4, 0, 0xc3,
]);
export const CODE_LOOP = Uint8Array.from([0xff, 0xc9, 0x75, 0xfc, 0xf4]);
export const CODE_SWITCH = Uint8Array.from([0x0f, 0x22, 0xd8, 0x48, 0xcf]);

/** `n` turns of CODE_CALLS's loop at `base` (call f, ret, dec, jnz). */
export const callTurns = (base: bigint, n: number) =>
  Array.from({ length: n }, () => [
    insn(base + 5n, 5, "call"),
    insn(base + 0x10n, 1, "return"),
    insn(base + 0xan, 2),
    insn(base + 0xcn, 2, "cond-branch"),
  ]).flat();

/** `n` turns of CODE_LOOP's loop at `base`. */
export const loopTurns = (base: bigint, n: number) =>
  Array.from({ length: n }, () => [insn(base, 2), insn(base + 2n, 2, "cond-branch")]).flat();

/** An interrupt before `from` into the kernel, which loads `cr3` and returns to user mode. */
export const switchTo = (from: bigint, cr3: string) => [
  JSON.stringify({
    k: "interrupt",
    vector: 32,
    from: `0x${from.toString(16)}`,
    to: `0x${SWITCH_KERNEL.toString(16)}`,
  }),
  JSON.stringify({ k: "cpl", cpl: 0 }),
  insn(SWITCH_KERNEL, 3, "mov-cr3"),
  JSON.stringify({ k: "cr3", cr3 }),
  insn(SWITCH_KERNEL + 3n, 2, "iret"),
  JSON.stringify({ k: "cpl", cpl: 3 }),
];

export function execIps(exec: readonly string[]): string[] {
  return exec
    .map((l) => JSON.parse(l) as { k: string; ip: string })
    .filter((r) => r.k === "insn")
    .map((r) => BigInt(r.ip).toString(16).padStart(16, "0"));
}

/** The trace of an execution: branches, TSC, MTC and CYC, a PSB every 2 KiB, user and kernel. */
export function traceOf(exec: readonly string[], extra: Record<string, number> = {}): Uint8Array {
  const m = msrs({ ctl: { ...BRANCHES, TSCEn: 1, MTCEn: 1, MTCFreq: 3, CYCEn: 1, PSBFreq: 0, ...extra } });
  return generate(readExecJsonl(`${exec.join("\n")}\n`), { msrs: m, cyclesPerInsn: 3 }).bytes;
}

/** A build_id feature section: (pid, path, 40-digit build id) entries as perf writes them (user mode). */
export function buildIdFeature(entries: Array<[number, string, string]>): Uint8Array {
  const body = new Le();
  for (const [pid, path, id] of entries) {
    const name = new Le().str(path, 64).done();
    body
      .u32(9)
      .u16(2)
      .u16(8 + 4 + 24 + name.length);
    body
      .u32(pid)
      .raw(Buffer.from(id.padEnd(48, "0"), "hex"))
      .raw(name);
  }
  return body.done();
}

/** Builds the records of a perf.data file recorded with -e intel_pt//. */
export class PtFile {
  readonly records: Uint8Array[] = [];
  readonly features = new Map<number, Uint8Array>([[9, new Le().lenStr("GenuineIntel,6,94,3").done()]]);

  constructor() {
    // AUXTRACE_INFO: the 17 Intel PT words (pmu 8, TSC bit 10, MTC bit 9 with period
    // bits 14-17, CYC bit 1, TSC:CTC 308/2, nominal ratio 37), then TIME_CONV.
    const words = [8n, 0n, 1n, 0n, 1n, 1n << 10n, 1n << 11n, 0n, 0n, 1n, 1n << 9n, 0xfn << 14n];
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
    if (buildId) body.u8(20).u8(0).u16(0).raw(Buffer.from(buildId, "hex")).u32(0);
    else body.u32(8).u32(1).u64(1234).u64(0);
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

  /** The trace of one CPU, split into AUXTRACE records of at most `chunk` bytes. */
  trace(bytes: Uint8Array, cpu = 0, chunk = bytes.length): this {
    for (let at = 0; at < bytes.length; at += chunk) {
      const part = bytes.subarray(at, Math.min(bytes.length, at + chunk));
      this.records.push(auxtrace(part, { offset: at, idx: cpu, tid: -1, cpu }));
    }
    return this;
  }

  built(): Built {
    return {
      events: [
        {
          attr: {
            type: 8,
            config: (1n << 10n) | (1n << 9n) | (3n << 14n) | 2n,
            sampleType: PT_SAMPLE_TYPE,
            sampleIdAll: true,
          },
          ids: [PT_ID],
        },
      ],
      records: [concat(this.records)],
      features: this.features,
    };
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
  const layout = writeElf({
    is64: true,
    le: true,
    type: ET_EXEC,
    machine: 62,
    entry: text,
    segments: [{ type: PT_LOAD, flags: PF_R | PF_X, vaddr: text, data: code, align: 0x1000n }],
    sections: [
      { name: ".text", type: SHT_PROGBITS, flags: 6n, addr: text, data: code },
      { name: ".symtab", type: 2, data: symtab.done() },
      { name: ".strtab", type: SHT_STRTAB, data: names.done() },
    ],
  });
  // .symtab's sh_link: .strtab (section 3).
  new DataView(layout.bytes.buffer).setUint32(layout.shoff + 2 * layout.shentsize + 40, 3, true);
  return layout.bytes;
}
