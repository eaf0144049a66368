/**
 * `ptkit perf --branches` on a kernel-traced run: an interrupt right after a direct
 * jump, and the IRETQ back. perf script prints the jump to where the interrupt came
 * (not to the handler), the interrupt as "hw int" (intel-pt.c: an async branch with a
 * destination is BRANCH|CALL|ASYNC|INTERRUPT; builtin-script.c names it "hw int") and
 * the IRETQ as "iret" (INTEL_PT_OP_IRET: BRANCH|RETURN|INTERRUPT), not "sysret".
 * Against perf script itself where perf is installed (the kernel's code from --vmlinux).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { runPerf } from "../../src/cli/perf.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbols, elfWithSymbolsLayout, PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { captureIo } from "../conformance/ptt.js";
import { EMPTY_HOME } from "./home.js";
import { insn, traceOf } from "./pt-file.js";

const perf = spawnSync("perf", ["version"], { encoding: "utf8" });
const skip = perf.status === 0 ? false : "perf is not installed";
const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-kernel-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const BASE = 0x400000n;
const KERNEL = 0xffffffff81000000n;

function kernelData(): string {
  // jmp +2; nop; nop; nop; hlt: the interrupt comes before the nop the jmp went to.
  const code = Uint8Array.from([0xeb, 0x02, 0x90, 0x90, 0x90, 0xf4]);
  const elf = elfWithSymbolsLayout(BASE, code, [{ name: "main", value: BASE, size: code.length }]);
  const prog = join(dir, "prog.elf");
  writeFileSync(prog, elf.bytes);
  // The handler: iretq.
  writeFileSync(
    join(dir, "vmlinux"),
    elfWithSymbols(KERNEL, Uint8Array.from([0x48, 0xcf]), [
      { name: "_text", value: KERNEL, size: 0 },
      { name: "handler", value: KERNEL, size: 2 },
    ]),
  );
  const exec = [
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
  const file = new PtFile({ perfScript: true })
    .kernelMmap("[kernel.kallsyms]_text", KERNEL, 0x1000000n, KERNEL)
    .comm(100, "prog", TRACE_TSC - 100n)
    .mmap2(100, BASE, 0x1000n, BigInt(elf.segOffsets[0]!), prog, TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n)
    .trace(traceOf(exec));
  const data = join(dir, "kernel.data");
  writeFileSync(data, fileMode(file.built()));
  return data;
}

const line = (flags: string, from: bigint, to: bigint) =>
  `  ${flags.padEnd(23)}${from.toString(16).padStart(16)} => ${to.toString(16).padStart(16)}\n`;

function ptkitPerf(args: string[]): string {
  const io = captureIo(dir);
  assert.equal(runPerf([...args, "--vmlinux", join(dir, "vmlinux")], io, EMPTY_HOME), 0, io.err.join(""));
  assert.equal(io.err.join(""), "");
  return io.out.join("");
}

function perfScript(data: string, itrace: string): string {
  const args = [
    "script",
    "-i",
    data,
    "--vmlinux",
    join(dir, "vmlinux"),
    `--itrace=${itrace}`,
    "-F",
    "ip,addr,flags",
  ];
  const r = spawnSync("perf", args, { encoding: "utf8", env: { ...process.env, HOME: EMPTY_HOME } });
  assert.equal(r.status, 0, `perf script: ${r.stderr}`);
  return r.stdout;
}

test("kernel-traced: a jmp before an interrupt goes to where the interrupt came; hw int; iret", () => {
  const data = kernelData();
  const branches = ptkitPerf(["--branches", data]);
  const calls =
    line("hw int", BASE + 4n, KERNEL) +
    line("iret", KERNEL, BASE + 4n) +
    line("tr end  async", BASE + 5n, 0n);
  assert.equal(branches, line("jmp", BASE, BASE + 4n) + calls);
  assert.equal(ptkitPerf(["--calls", data]), calls);
  // The instruction decoder's names are the block decoder's.
  assert.equal(ptkitPerf(["--branches", "--insn-decoder", data]), branches);
  if (skip) return;
  assert.equal(branches, perfScript(data, "be"));
  assert.equal(calls, perfScript(data, "cr"));
});
