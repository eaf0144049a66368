/**
 * Linux perf itself decodes the perf.data files that tools/perf/pt-file.ts writes
 * with `perfScript` (the analysis benchmarks time perf on such a file): `perf script
 * --itrace=be -F ip,addr,flags` prints the same branch lines as `ptkit perf
 * --branches`, reading the code from an ELF file of elfWithSymbols (perf divides by
 * the .symtab's sh_entsize: 0 crashed it), and `--itrace=cr` the lines of `--calls`;
 * also where an interrupt stops user-mode tracing at the target of a branch, and on a
 * kernel-traced run: the jump before the interrupt goes to where the interrupt came
 * (not to the handler), the interrupt is "hw int" (intel-pt.c: an async branch with a
 * destination is BRANCH|CALL|ASYNC|INTERRUPT; builtin-script.c names it "hw int") and
 * the IRETQ "iret" (INTEL_PT_OP_IRET: BRANCH|RETURN|INTERRUPT), not "sysret". The
 * exact lines are checked everywhere, against perf script where perf is installed.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbols, elfWithSymbolsLayout, PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { insn, loopProgram, traceOf } from "./pt-file.js";
import { okOut, perfScriptRun, ptkitPerfRun } from "./script-runs.js";

const perf = spawnSync("perf", ["version"], { encoding: "utf8" });
const skip = perf.status === 0 ? false : "perf is not installed";
const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-peer-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const BASE = 0x400000n;
const KERNEL = 0xffffffff81000000n;
const VMLINUX = join(dir, "vmlinux");

/**
 * A perfScript perf.data of `exec` (of `code` at BASE) in `name`, and its ELF file
 * beside it; with `kernel`, the kernel's code too (at KERNEL, in VMLINUX) and the
 * mapping that tells perf where the kernel is.
 */
function perfData(
  name: string,
  code: Uint8Array,
  exec: string[],
  extra: Record<string, number> = {},
  kernel?: Uint8Array,
): string {
  const elf = elfWithSymbolsLayout(BASE, code, [{ name: "main", value: BASE, size: code.length }]);
  const prog = join(dir, `${name}.elf`);
  writeFileSync(prog, elf.bytes);
  const file = new PtFile({ perfScript: true });
  if (kernel) {
    writeFileSync(
      VMLINUX,
      elfWithSymbols(KERNEL, kernel, [
        { name: "_text", value: KERNEL, size: 0 },
        { name: "handler", value: KERNEL, size: kernel.length },
      ]),
    );
    file.kernelMmap("[kernel.kallsyms]_text", KERNEL, 0x1000000n, KERNEL);
  }
  file
    .comm(100, "prog", TRACE_TSC - 100n)
    .mmap2(100, BASE, 0x1000n, BigInt(elf.segOffsets[0]!), prog, TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n)
    .trace(traceOf(exec, extra));
  const data = join(dir, `${name}.data`);
  writeFileSync(data, fileMode(file.built()));
  return data;
}

/** perf script's branch lines (`args`: more options, e.g. --vmlinux). */
function perfScript(data: string, itrace: string, args: string[] = []): string {
  const argv = ["-i", data, ...args, `--itrace=${itrace}`, "-F", "ip,addr,flags"];
  return okOut(perfScriptRun(argv), "perf script");
}

function ptkitPerf(args: string[]): string {
  const r = ptkitPerfRun(args, dir);
  assert.equal(r.err, "");
  return okOut(r);
}

/** A branch line as perf script prints it without symbols. */
const line = (flags: string, from: bigint, to: bigint) =>
  `  ${flags.padEnd(23)}${from.toString(16).padStart(16)} => ${to.toString(16).padStart(16)}\n`;

/** jmp +2; nop; nop; nop; hlt: an interrupt comes before the nop the jmp went to. */
const JUMP_CODE = Uint8Array.from([0xeb, 0x02, 0x90, 0x90, 0x90, 0xf4]);
/** The handler: iretq. */
const IRETQ = Uint8Array.from([0x48, 0xcf]);

/** The run of JUMP_CODE: the jmp, the interrupt into KERNEL's iretq, back to 400004, the end. */
function jumpThenInterrupt(): string[] {
  return [
    JSON.stringify({ k: "cpl", cpl: 3 }),
    insn(BASE, 2, "jump"),
    JSON.stringify({
      k: "interrupt",
      vector: 32,
      from: `0x${(BASE + 4n).toString(16)}`,
      to: `0x${KERNEL.toString(16)}`,
    }),
    JSON.stringify({ k: "cpl", cpl: 0 }),
    insn(KERNEL, 2, "iret"),
    JSON.stringify({ k: "cpl", cpl: 3 }),
    insn(BASE + 4n, 1),
    JSON.stringify({ k: "end", ip: `0x${(BASE + 5n).toString(16)}` }),
  ];
}

test("an interrupt at a branch's target stopping user-mode tracing: the branch, then tr end (as perf script)", () => {
  const data = perfData("async", JUMP_CODE, jumpThenInterrupt(), { OS: 0 });
  const branches = ptkitPerf(["--branches", data]);
  const calls = ptkitPerf(["--calls", data]);
  // Tracing stops at 400004 (the interrupt), starts there again and ends at the hlt.
  const end =
    line("tr end  async", BASE + 4n, 0n) +
    line("tr strt", 0n, BASE + 4n) +
    line("tr end  async", BASE + 5n, 0n);
  assert.equal(branches, line("jmp", BASE, BASE + 4n) + end);
  assert.equal(calls, end);
  if (skip) return;
  assert.equal(branches, perfScript(data, "be"));
  assert.equal(calls, perfScript(data, "cr"));
});

test("kernel-traced: a jmp before an interrupt goes to where the interrupt came; hw int; iret", () => {
  const data = perfData("kernel", JUMP_CODE, jumpThenInterrupt(), {}, IRETQ);
  const vmlinux = ["--vmlinux", VMLINUX];
  const branches = ptkitPerf(["--branches", ...vmlinux, data]);
  const calls =
    line("hw int", BASE + 4n, KERNEL) +
    line("iret", KERNEL, BASE + 4n) +
    line("tr end  async", BASE + 5n, 0n);
  assert.equal(branches, line("jmp", BASE, BASE + 4n) + calls);
  assert.equal(ptkitPerf(["--calls", ...vmlinux, data]), calls);
  // The instruction decoder's names are the block decoder's.
  assert.equal(ptkitPerf(["--branches", "--insn-decoder", ...vmlinux, data]), branches);
  if (skip) return;
  assert.equal(branches, perfScript(data, "be", vmlinux));
  assert.equal(calls, perfScript(data, "cr", vmlinux));
});

test("perf script decodes a perfScript PtFile: the lines of ptkit perf --branches and --calls", {
  skip,
}, () => {
  const turns = 300;
  const { code, exec } = loopProgram(BASE, turns);
  const data = perfData("loop", code, exec);
  const branches = perfScript(data, "be");
  // Each turn: call, return, jcc (taken but the last).
  assert.equal(branches.split("\n").filter((l) => l !== "").length, 3 * turns);
  assert.equal(ptkitPerf(["--branches", data]), branches);
  assert.equal(ptkitPerf(["--calls", data]), perfScript(data, "cr"));
});
