/**
 * Linux perf itself decodes the perf.data files that tools/perf/pt-file.ts writes
 * with `perfScript` (the analysis benchmarks time perf on such a file): `perf script
 * --itrace=be -F ip,addr,flags` prints the same branch lines as `ptkit perf
 * --branches`, reading the code from an ELF file of elfWithSymbols (perf divides by
 * the .symtab's sh_entsize: 0 crashed it). Skipped where perf is not installed.
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
import { loopProgram, traceOf } from "./pt-file.js";

const perf = spawnSync("perf", ["version"], { encoding: "utf8" });
const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-peer-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("perf script decodes a perfScript PtFile: the branch lines of ptkit perf --branches", {
  skip: perf.status === 0 ? false : "perf is not installed",
}, () => {
  const base = 0x400000n;
  const turns = 300;
  const { code, exec } = loopProgram(base, turns);
  const elf = elfWithSymbolsLayout(base, code, [
    { name: "main", value: base, size: 0x10 },
    { name: "f", value: base + 0x10n, size: 1 },
  ]);
  const prog = join(dir, "prog");
  writeFileSync(prog, elf.bytes);
  const file = new PtFile({ perfScript: true })
    .comm(100, "prog", TRACE_TSC - 100n)
    .mmap2(100, base, 0x1000n, BigInt(elf.segOffsets[0]!), prog, TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n)
    .trace(traceOf(exec));
  const data = join(dir, "perf.data");
  writeFileSync(data, fileMode(file.built()));

  const r = spawnSync("perf", ["script", "-i", data, "--itrace=be", "-F", "ip,addr,flags"], {
    encoding: "utf8",
    env: { ...process.env, HOME: EMPTY_HOME },
  });
  assert.equal(r.status, 0, `perf script: ${r.stderr} (signal ${r.signal})`);
  const io = captureIo(dir);
  assert.equal(runPerf(["--branches", data], io, EMPTY_HOME), 0, io.err.join(""));
  // Each turn: call, return, jcc (taken but the last).
  assert.equal(r.stdout.split("\n").filter((l) => l !== "").length, 3 * turns);
  assert.equal(io.out.join(""), r.stdout);
});
