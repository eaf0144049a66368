/**
 * KASLR: a vmlinux given with --vmlinux is moved to where the kernel ran, by the
 * kernel map perf recorded (`[kernel.kallsyms]_text` with pgoff the run-time address
 * of _text). A synthetic kernel, linked at 0xffffffff81000000, runs a loop 0x1e00000
 * higher: its instructions decode only with the relocation.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { runPerf } from "../../src/cli/perf/perf.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbols, PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { captureIo } from "../conformance/ptt.js";
import { EMPTY_HOME } from "./home.js";
import { execIps, loopProgram, traceOf } from "./pt-file.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-kaslr-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const LINK = 0xffffffff81000000n;
const RUN = LINK + 0x1e00000n;
const { code, exec } = loopProgram(RUN, 50);
const trace = traceOf(exec);

/** A perf.data whose kernel map is `name` with pgoff `pgoff`, and the loop's trace. */
function perfData(file: string, name: string, pgoff: bigint): string {
  const f = new PtFile()
    .kernelMmap(name, RUN, 0x1000000n, pgoff)
    .comm(100, "loop", TRACE_TSC - 100n)
    .itraceStart(100, 100, TRACE_TSC - 10n)
    .trace(trace);
  writeFileSync(join(dir, file), fileMode(f.built()));
  return file;
}

function vmlinux(file: string, symbols: string[]): string {
  const syms = symbols.map((name) => ({ name, value: LINK, label: true }));
  writeFileSync(
    join(dir, file),
    elfWithSymbols(LINK, code, [...syms, { name: "loop", value: LINK, size: 0x11 }]),
  );
  return file;
}

function run(args: string[]): { ips: string[]; out: string; err: string; code: number } {
  const io = captureIo(dir);
  const code = runPerf(args, io, EMPTY_HOME);
  const out = io.out.join("");
  return { ips: out.split("\n").filter((l) => /^[0-9a-f]{16}$/.test(l)), out, err: io.err.join(""), code };
}

test("--vmlinux is relocated by [kernel.kallsyms]_text's pgoff", () => {
  const r = run([
    "--vmlinux",
    vmlinux("vmlinux", ["_text", "_stext"]),
    perfData("kaslr.data", "[kernel.kallsyms]_text", RUN),
  ]);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.err, "");
  assert.deepEqual(r.ips, execIps(exec));
  assert.ok(r.ips.length > 200 && r.ips[0]!.startsWith("ffffffff82e"));
});

test("without the run-time address (kptr_restrict: pgoff 0) the link address is wrong: no instructions", () => {
  const r = run([
    "--vmlinux",
    vmlinux("vmlinux", ["_text"]),
    perfData("hidden.data", "[kernel.kallsyms]_text", 0n),
  ]);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(r.ips, []);
  assert.match(r.out, /^\[[0-9a-f]+: no memory mapped at this address/m);
});

test("the reference symbol the map names (_stext), or _text then _stext for a bare [kernel.kallsyms]", () => {
  const stext = vmlinux("vmlinux-stext", ["_stext"]);
  for (const name of ["[kernel.kallsyms]_stext", "[kernel.kallsyms]"]) {
    const r = run(["--vmlinux", stext, perfData("stext.data", name, RUN)]);
    assert.equal(r.err, "", name);
    assert.deepEqual(r.ips, execIps(exec), name);
  }
});

test("a vmlinux without the reference symbol is left where it was linked, with a warning", () => {
  const r = run([
    "--vmlinux",
    vmlinux("vmlinux-nosym", []),
    perfData("kaslr.data", "[kernel.kallsyms]_text", RUN),
  ]);
  assert.equal(r.code, 0);
  assert.deepEqual(r.ips, []);
  assert.equal(
    r.err.split("\n")[0],
    "ptkit perf: warning: vmlinux-nosym: the kernel ran with _text at 0xffffffff82e00000, but no _text symbol to relocate it by: left at its link address.",
  );
});
