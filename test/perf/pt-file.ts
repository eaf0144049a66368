/**
 * Programs, executions and traces for the synthetic perf.data files of the `ptkit
 * perf` tests (written by tools/perf/pt-file.ts's PtFile): small programs, their
 * executions in JSON Lines, and their traces from the packet generator (src/unit/gen).
 */

import { readExecJsonl } from "../../src/unit/exec/jsonl.js";
import { generate } from "../../src/unit/gen/index.js";
import { Le } from "../../tools/perf/perf-data-writer.js";
import { BRANCHES, msrs } from "../unit/gen/helpers.js";

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

/** An interrupt before `from` into the kernel, which runs `body` (its IRET last) and returns to user mode. */
export const kernelVisit = (from: bigint, body: readonly string[]) => [
  JSON.stringify({
    k: "interrupt",
    vector: 32,
    from: `0x${from.toString(16)}`,
    to: `0x${SWITCH_KERNEL.toString(16)}`,
  }),
  JSON.stringify({ k: "cpl", cpl: 0 }),
  ...body,
  JSON.stringify({ k: "cpl", cpl: 3 }),
];

/** An interrupt before `from` into the kernel, which loads `cr3` and returns to user mode. */
export const switchTo = (from: bigint, cr3: string) =>
  kernelVisit(from, [
    insn(SWITCH_KERNEL, 3, "mov-cr3"),
    JSON.stringify({ k: "cr3", cr3 }),
    insn(SWITCH_KERNEL + 3n, 2, "iret"),
  ]);

export function execIps(exec: readonly string[]): string[] {
  return exec
    .map((l) => JSON.parse(l) as { k: string; ip: string })
    .filter((r) => r.k === "insn")
    .map((r) => BigInt(r.ip).toString(16).padStart(16, "0"));
}

/**
 * The trace of an execution: branches, TSC, MTC and CYC, a PSB every 2 KiB, user and
 * kernel. `internalBuffer`: the trace unit's (src/unit/gen), too small: it overflows (OVF).
 */
export function traceOf(
  exec: readonly string[],
  extra: Record<string, number> = {},
  tsc?: bigint,
  internalBuffer?: { bytes: number; drainPerCycle: number },
): Uint8Array {
  const m = msrs({ ctl: { ...BRANCHES, TSCEn: 1, MTCEn: 1, MTCFreq: 3, CYCEn: 1, PSBFreq: 0, ...extra } });
  const options = { msrs: m, cyclesPerInsn: 3, tsc, ...(internalBuffer ? { internalBuffer } : {}) };
  return generate(readExecJsonl(`${exec.join("\n")}\n`), options).bytes;
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
