/**
 * Linux perf itself decodes the perf.data files that tools/perf/pt-file.ts writes
 * with `perfScript` (the analysis benchmarks time perf on such a file): `perf script
 * --itrace=be -F ip,addr,flags` prints the same branch lines as `ptkit perf
 * --branches`, reading the code from an ELF file of elfWithSymbols (perf divides by
 * the .symtab's sh_entsize: 0 crashed it), and `--itrace=cr` the lines of `--calls`;
 * also where an interrupt stops user-mode tracing at the target of a branch. Skipped
 * where perf is not installed.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { runPerf } from "../../src/cli/perf.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbolsLayout, PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { captureIo } from "../conformance/ptt.js";
import { EMPTY_HOME } from "./home.js";
import { insn, loopProgram, traceOf } from "./pt-file.js";

const perf = spawnSync("perf", ["version"], { encoding: "utf8" });
const skip = perf.status === 0 ? false : "perf is not installed";
const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-peer-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const BASE = 0x400000n;

/** A perfScript perf.data of `exec` (of `code` at BASE) in `name`, and its ELF file beside it. */
function perfData(
  name: string,
  code: Uint8Array,
  exec: string[],
  extra: Record<string, number> = {},
): string {
  const elf = elfWithSymbolsLayout(BASE, code, [{ name: "main", value: BASE, size: code.length }]);
  const prog = join(dir, `${name}.elf`);
  writeFileSync(prog, elf.bytes);
  const file = new PtFile({ perfScript: true })
    .comm(100, "prog", TRACE_TSC - 100n)
    .mmap2(100, BASE, 0x1000n, BigInt(elf.segOffsets[0]!), prog, TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n)
    .trace(traceOf(exec, extra));
  const data = join(dir, `${name}.data`);
  writeFileSync(data, fileMode(file.built()));
  return data;
}

function perfScript(data: string, itrace: string): string {
  const r = spawnSync("perf", ["script", "-i", data, `--itrace=${itrace}`, "-F", "ip,addr,flags"], {
    encoding: "utf8",
    env: { ...process.env, HOME: EMPTY_HOME },
  });
  assert.equal(r.status, 0, `perf script: ${r.stderr} (signal ${r.signal})`);
  return r.stdout;
}

function ptkitPerf(args: string[]): string {
  const io = captureIo(dir);
  assert.equal(runPerf(args, io, EMPTY_HOME), 0, io.err.join(""));
  return io.out.join("");
}

test("an interrupt at a branch's target stopping user-mode tracing: the branch, then tr end (as perf script)", () => {
  // jmp +2; nop; nop; nop; hlt: the interrupt comes before the nop the jmp went to.
  const code = Uint8Array.from([0xeb, 0x02, 0x90, 0x90, 0x90, 0xf4]);
  const kernel = 0xffffffff81000000n;
  const exec = [
    JSON.stringify({ k: "cpl", cpl: 3 }),
    insn(BASE, 2, "jump"),
    JSON.stringify({
      k: "interrupt",
      vector: 32,
      from: `0x${(BASE + 4n).toString(16)}`,
      to: `0x${kernel.toString(16)}`,
    }),
    JSON.stringify({ k: "cpl", cpl: 0 }),
    insn(kernel, 2, "iret"),
    JSON.stringify({ k: "cpl", cpl: 3 }),
    insn(BASE + 4n, 1),
    JSON.stringify({ k: "end", ip: `0x${(BASE + 5n).toString(16)}` }),
  ];
  const data = perfData("async", code, exec, { OS: 0 });
  const branches = ptkitPerf(["--branches", data]);
  const calls = ptkitPerf(["--calls", data]);
  const line = (flags: string, from: bigint, to: bigint) =>
    `  ${flags.padEnd(23)}${from.toString(16).padStart(16)} => ${to.toString(16).padStart(16)}\n`;
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
