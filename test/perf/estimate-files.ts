/**
 * Generated perf.data files whose trace covers both the kernel and user space (OS and
 * USR on): a user loop that makes a system call each turn (SYSCALL into a kernel
 * entry that counts down and returns by SYSRETQ) and takes an interrupt every few
 * turns (its handler only an IRETQ). perf script times each branch from the kernel
 * back into user space by an estimate (intel-pt.c's intel_pt_run_decoder); the
 * kernel's code comes from a vmlinux ELF given with --vmlinux.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { readExecJsonl } from "../../src/unit/exec/jsonl.js";
import { generate } from "../../src/unit/gen/index.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbols, elfWithSymbolsLayout, PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { BRANCHES, msrs } from "../unit/gen/helpers.js";
import { insn } from "./pt-file.js";

export const USER = 0x400000n;
export const KERNEL = 0xffffffff81000000n;

const hex = (a: bigint) => `0x${a.toString(16)}`;

/** `mov ecx, n; l: syscall; dec ecx; jnz l; hlt` at USER. */
function userCode(turns: number): Uint8Array {
  return Uint8Array.from([
    0xb9,
    turns & 0xff,
    (turns >> 8) & 0xff,
    0,
    0,
    0x0f,
    0x05,
    0xff,
    0xc9,
    0x75,
    0xfa,
    0xf4,
  ]);
}

/** At KERNEL: `mov eax, 3; l: dec eax; jnz l; sysretq`; at KERNEL + 0x10: `iretq`. */
const KERNEL_CODE = Uint8Array.from([
  0xb8, 3, 0, 0, 0, 0xff, 0xc8, 0x75, 0xfc, 0x48, 0x0f, 0x07, 0, 0, 0, 0, 0x48, 0xcf,
]);

export interface EstimateFile {
  /** The perf.data file and the vmlinux to give perf script and ptkit perf. */
  data: string;
  vmlinux: string;
}

/**
 * The file in `dir`: `turns` turns, an interrupt before every `every`-th jnz; timed
 * by CYC (`cyc`) or by MTC alone. `switchIp`: recorded with CPU-wide context switch
 * events and a kernel with `__switch_to` (and `__perf_event_task_sched_out`), where
 * perf 6.1 finds its switch IP and syncs thread switches to it (intel_pt_switch_ip):
 * that leaves its estimates on.
 */
export function kernelUserFile(
  dir: string,
  cyc: boolean,
  {
    turns = 300,
    every = 5,
    switchIp = false,
    userOnly = false,
    internalBuffer,
  }: {
    turns?: number;
    every?: number;
    switchIp?: boolean;
    /** Trace user space only (OS off): the kernel's stretches are TIP.PGD/PGE pairs. */
    userOnly?: boolean;
    /** The trace unit's internal buffer (src/unit/gen): too small, it overflows (OVF). */
    internalBuffer?: { bytes: number; drainPerCycle: number };
  } = {},
): EstimateFile {
  const exec = [JSON.stringify({ k: "cpl", cpl: 3 }), insn(USER, 5)];
  for (let t = 0; t < turns; t++) {
    exec.push(insn(USER + 5n, 2, "syscall"), JSON.stringify({ k: "cpl", cpl: 0 }));
    exec.push(insn(KERNEL, 5));
    for (let i = 0; i < 3; i++) exec.push(insn(KERNEL + 5n, 2), insn(KERNEL + 7n, 2, "cond-branch"));
    exec.push(insn(KERNEL + 9n, 3, "sysret"), JSON.stringify({ k: "cpl", cpl: 3 }));
    exec.push(insn(USER + 7n, 2));
    if (t % every === every - 1)
      exec.push(
        JSON.stringify({ k: "interrupt", vector: 32, from: hex(USER + 9n), to: hex(KERNEL + 0x10n) }),
        JSON.stringify({ k: "cpl", cpl: 0 }),
        insn(KERNEL + 0x10n, 2, "iret"),
        JSON.stringify({ k: "cpl", cpl: 3 }),
      );
    exec.push(insn(USER + 9n, 2, "cond-branch"));
  }
  exec.push(JSON.stringify({ k: "end", ip: hex(USER + 0xbn) }));
  const ctl = {
    ...BRANCHES,
    OS: userOnly ? 0 : 1,
    TSCEn: 1,
    MTCEn: 1,
    MTCFreq: 3,
    CYCEn: cyc ? 1 : 0,
    PSBFreq: 0,
  };
  const trace = generate(readExecJsonl(`${exec.join("\n")}\n`), {
    msrs: msrs({ ctl }),
    cyclesPerInsn: 3,
    tsc: TRACE_TSC,
    nominalRatio: 40,
    cbr: 40,
    ...(internalBuffer ? { internalBuffer } : {}),
  }).bytes;
  const code = userCode(turns);
  const elf = elfWithSymbolsLayout(USER, code, [{ name: "main", value: USER, size: code.length }]);
  const prog = join(dir, "sys.elf");
  writeFileSync(prog, elf.bytes);
  const vmlinux = join(dir, switchIp ? "vmlinux-switch" : "vmlinux");
  writeFileSync(
    vmlinux,
    elfWithSymbols(KERNEL, KERNEL_CODE, [
      { name: "_text", value: KERNEL, label: true },
      { name: "entry_SYSCALL_64", value: KERNEL, size: 12 },
      ...(switchIp
        ? [
            // (The interrupt handler: the branches into it go to the switch IP.)
            { name: "__switch_to", value: KERNEL + 0x10n, size: 2 },
            { name: "__perf_event_task_sched_out", value: KERNEL + 0xcn, size: 4 },
          ]
        : [{ name: "irq_entry", value: KERNEL + 0x10n, size: 2 }]),
    ]),
  );
  const file = new PtFile({ perfScript: true, schedSwitch: switchIp ? 3 : 0 })
    .kernelMmap("[kernel.kallsyms]_text", KERNEL, 0x1000000n, KERNEL)
    .comm(100, "sys", TRACE_TSC - 100n)
    .mmap2(100, USER, 0x1000n, BigInt(elf.segOffsets[0]!), prog, TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n)
    .trace(trace);
  const ovf = internalBuffer ? `-ovf${internalBuffer.bytes}-${internalBuffer.drainPerCycle}` : "";
  const kind = `${userOnly ? "user" : "kernel-user"}-${cyc ? "cyc" : "mtc"}${switchIp ? "-switch" : ""}${ovf}`;
  const data = join(dir, `${kind}.data`);
  writeFileSync(data, fileMode(file.built()));
  return { data, vmlinux };
}
