/**
 * A perf.data file whose threads migrate between CPUs in the middle of calls: the
 * workload of the shard tests (and of the scale measurements in docs/shards.md).
 *
 * The program: functions F0..F(n-1), F_i at BASE + 0x20 i, each
 * `jnz +5; call F_{i+1}; jnz +5; call F_{i+2}; ret` (calls past the last function
 * left out), so every execution is a random call tree of bounded depth. Each
 * thread's execution is cut at random instructions into runs; the runs are dealt
 * round-robin over the CPUs in time order, each run's trace made by the trace-unit
 * model (user-only, with TSC, MTC and CYC), entered and left through an untraced
 * interrupt, with SWITCH_CPU_WIDE records around it. A thread's call on one CPU so
 * returns on another, and a CPU's stream holds runs of many threads.
 */
import { readExecJsonl } from "../../src/unit/exec/jsonl.js";
import { generate } from "../../src/unit/gen/index.js";
import { Rng } from "../../tools/fuzz/prng.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbolsLayout, PtFile, switchCpuWide, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { insn } from "../perf/pt-file.js";
import { BRANCHES, msrs } from "../unit/gen/helpers.js";

const BASE = 0x400000n;
const KERNEL = 0xffffffff81000000n;
const FN_BYTES = 0x20n;
/** TSC ticks between two runs on a CPU: a run is far shorter (the trace unit model takes about 2,000 ticks an instruction here). */
const RUN_GAP = 0x10000000n;
const hex = (v: bigint) => `0x${v.toString(16)}`;

export interface MigrateWorkload {
  /** The perf.data file's bytes. */
  perfData: Uint8Array;
  /** The program's ELF file (at BASE), to write as `binaryName` beside perf.data. */
  elf: Uint8Array;
  binaryName: string;
  /** User instructions executed, all threads. */
  insns: number;
}

export interface MigrateOptions {
  cpus: number;
  threads: number;
  /** Runs per thread. */
  runs: number;
  /** Calls made per thread (about). */
  calls: number;
  functions?: number;
  seed?: number;
  /**
   * How a CPU's trace takes up a thread that ran before: the untraced kernel returns to
   * it (TIP.PGE, the default), or the trace starts in user mode with tracing on (a
   * PSB+ and no TIP.PGE where the run starts a CPU's stream).
   */
  takeUp?: "pge" | "psb";
}

/** The code of the program (see the module comment). */
function program(n: number): Uint8Array {
  const code = new Uint8Array(Number(FN_BYTES) * n);
  for (let i = 0; i < n; i++) {
    const at = i * Number(FN_BYTES);
    let p = at;
    for (const callee of [i + 1, i + 2]) {
      if (callee >= n) continue;
      code.set([0x75, 0x05], p); // jnz +5 (over the call)
      const rel = callee * Number(FN_BYTES) - (p + 7);
      code.set([0xe8, rel & 0xff, (rel >> 8) & 0xff, (rel >> 16) & 0xff, (rel >>> 24) & 0xff], p + 2);
      p += 7;
    }
    code[p] = 0xc3; // ret
  }
  return code;
}

/** One call of F_i as exec lines (taking the calls at random), until `budget` calls are spent. */
function callTree(rng: Rng, n: number, i: number, out: string[], budget: { calls: number }): void {
  let p = BASE + BigInt(i) * FN_BYTES;
  for (const callee of [i + 1, i + 2]) {
    if (callee >= n) continue;
    const call = budget.calls > 0 && rng.below(3) !== 0;
    out.push(insn(p, 2, "cond-branch"));
    if (call) {
      budget.calls--;
      out.push(insn(p + 2n, 5, "call"));
      callTree(rng, n, callee, out, budget);
    }
    p += 7n;
  }
  out.push(insn(p, 1, "return"));
}

export function migrateWorkload(o: MigrateOptions): MigrateWorkload {
  const n = o.functions ?? 12;
  const rng = new Rng(o.seed ?? 1);
  const code = program(n);
  const symbols = Array.from({ length: n }, (_, i) => ({
    name: `F${i}`,
    value: BASE + BigInt(i) * FN_BYTES,
    size: Number(FN_BYTES),
  }));
  const layout = elfWithSymbolsLayout(BASE, code, symbols);
  const binaryName = "migrate";
  // Each thread: the root F0 called over and over (its return goes nowhere traced: the
  // thread's code before F0 is not in the program, so each F0 is a root of its own).
  const runs: { tid: number; exec: string[] }[][] = [];
  let insns = 0;
  for (let t = 0; t < o.threads; t++) {
    const exec: string[] = [];
    const budget = { calls: o.calls };
    while (budget.calls > 0) callTree(rng, n, 0, exec, budget);
    // Only insn lines count; the tree ends at a return from F0 into nothing: end after it.
    insns += exec.length;
    const cuts = new Set<number>();
    while (cuts.size < o.runs - 1) cuts.add(1 + rng.below(exec.length - 2));
    const at = [0, ...[...cuts].sort((a, b) => a - b), exec.length];
    runs.push(at.slice(1).map((end, r) => ({ tid: 100 + t, exec: exec.slice(at[r]!, end) })));
  }
  // Time order: the r-th run of every thread, then the next r.
  const order = runs[0]!.flatMap((_, r) => runs.map((thread) => thread[r]!));
  const file = new PtFile();
  for (let t = 0; t < o.threads; t++) {
    const pid = 100 + t;
    file.comm(pid, `thread${t}`, TRACE_TSC - 200n);
    file.mmap2(
      pid,
      BASE,
      BigInt(code.length),
      BigInt(layout.segOffsets[0]!),
      `/bin/${binaryName}`,
      TRACE_TSC - 100n,
    );
  }
  const perCpu: Uint8Array[][] = Array.from({ length: o.cpus }, () => []);
  const started = new Set<number>();
  order.forEach((run, k) => {
    const cpu = k % o.cpus;
    const tsc = TRACE_TSC + BigInt(k) * RUN_GAP;
    const exec: string[] = [];
    if (started.has(run.tid) && o.takeUp !== "psb") {
      // Back from the interrupt that ended its last run.
      exec.push(JSON.stringify({ k: "cpl", cpl: 0 }), insn(KERNEL + 3n, 2, "iret"));
    }
    started.add(run.tid);
    exec.push(JSON.stringify({ k: "cpl", cpl: 3 }), ...run.exec);
    const next = order.slice(k + 1).find((r) => r.tid === run.tid)?.exec[0];
    const nextIp = next === undefined ? undefined : (JSON.parse(next) as { ip: string }).ip;
    if (nextIp !== undefined) {
      exec.push(
        JSON.stringify({ k: "interrupt", vector: 32, from: nextIp, to: hex(KERNEL) }),
        JSON.stringify({ k: "cpl", cpl: 0 }),
        insn(KERNEL, 3),
        JSON.stringify({ k: "end", ip: hex(KERNEL + 3n) }),
      );
    } else exec.push(JSON.stringify({ k: "end", ip: hex(BASE + 0x1000n) }));
    const ctl = { ...BRANCHES, OS: 0, TSCEn: 1, MTCEn: 1, MTCFreq: 3, CYCEn: 1, PSBFreq: 0 };
    perCpu[cpu]!.push(
      generate(readExecJsonl(`${exec.join("\n")}\n`), { msrs: msrs({ ctl }), cyclesPerInsn: 3, tsc }).bytes,
    );
    file.records.push(
      switchCpuWide(false, run.tid, 0, tsc - 0x1000n, cpu),
      switchCpuWide(true, run.tid, 0, tsc + RUN_GAP / 2n, cpu),
    );
  });
  perCpu.forEach((parts, cpu) => {
    const total = parts.reduce((s, p) => s + p.length, 0);
    const bytes = new Uint8Array(total);
    let at = 0;
    for (const p of parts) {
      bytes.set(p, at);
      at += p.length;
    }
    file.trace(bytes, cpu);
  });
  return { perfData: fileMode(file.built()), elf: layout.bytes, binaryName, insns };
}

/**
 * One thread running the same program as a raw trace (no perf.data): `calls` calls,
 * with a PSB every 2^(PSBFreq + 11) bytes of trace (PSBFreq 1: 4 KiB), TSC, MTC and CYC.
 */
export function rawWorkload(calls: number, seed = 1): { trace: Uint8Array; elf: Uint8Array; insns: number } {
  const n = 12;
  const rng = new Rng(seed);
  const exec: string[] = [];
  const budget = { calls };
  while (budget.calls > 0) callTree(rng, n, 0, exec, budget);
  const insns = exec.length;
  exec.unshift(JSON.stringify({ k: "cpl", cpl: 3 }));
  exec.push(JSON.stringify({ k: "end", ip: hex(BASE + 0x1000n) }));
  const ctl = { ...BRANCHES, OS: 0, TSCEn: 1, MTCEn: 1, MTCFreq: 3, CYCEn: 1, PSBFreq: 1 };
  const trace = generate(readExecJsonl(`${exec.join("\n")}\n`), {
    msrs: msrs({ ctl }),
    cyclesPerInsn: 3,
    tsc: TRACE_TSC,
  }).bytes;
  const symbols = Array.from({ length: n }, (_, i) => ({
    name: `F${i}`,
    value: BASE + BigInt(i) * FN_BYTES,
    size: Number(FN_BYTES),
  }));
  return { trace, elf: elfWithSymbolsLayout(BASE, program(n), symbols).bytes, insns };
}
