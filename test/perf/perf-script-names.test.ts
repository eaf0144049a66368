/**
 * perf script's dso and symbol names where no file backs a mapping ([vdso], a binary
 * not found, the kernel without its image), for PLT stubs and among aliases: ptkit perf
 * prints perf script 6.1's lines. On a generated file with Intel PT (checked against
 * perf where it is installed), and on recordings made here of programs built with gcc
 * (a loop calling libc through the PLT: lazy, non-PIE, IBT's .plt.sec; clock_gettime
 * in the vDSO; a program deleted after its recording), skipped when recording is not
 * permitted.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { CONTEXT_USER, elfWithSymbolsLayout, PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { EMPTY_HOME } from "./home.js";
import { loopProgram, traceOf } from "./pt-file.js";
import { perfScriptRun, ptkitPerfRun } from "./script-runs.js";

const has = (tool: string, args: string[]) => spawnSync(tool, args, { encoding: "utf8" }).status === 0;
const noPerf = has("perf", ["version"]) ? false : "perf is not installed";
const noGcc = has("gcc", ["--version"]) ? false : "gcc is not installed";
const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-names-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const perfScript = (data: string, args: string[], home = EMPTY_HOME) =>
  perfScriptRun(["-i", data, ...args], undefined, home);
const ptkitPerf = (args: string[], home = EMPTY_HOME) => ptkitPerfRun(args, dir, home);

/** ptkit perf's lines are perf script's, byte for byte, for each argument list; ptkit's output. */
function samePerfScript(data: string, argLists: string[][]): string {
  let all = "";
  for (const args of argLists) {
    const want = perfScript(data, args);
    assert.equal(want.status, 0, want.err);
    const got = ptkitPerf(["-i", data, ...args]);
    assert.equal(got.status, 0, got.err);
    assert.equal(got.out, want.out, args.join(" "));
    all += got.out;
  }
  return all;
}

const BASE = 0x400000n;
const VDSO = 0x7fff_f7fc_0000n;
const GONE = 0x7fff_f7000000n;
const KERNEL = 0xffff_ffff_8100_0000n;
const CONTEXT_KERNEL = 0xffff_ffff_ffff_ff80n;

test("an Intel PT file's samples in [vdso], a binary not found and the kernel: perf's dso names", () => {
  const { code, exec } = loopProgram(BASE, 50);
  const elf = elfWithSymbolsLayout(BASE, code, [{ name: "main", value: BASE, size: code.length }]);
  const prog = join(dir, "prog.elf");
  writeFileSync(prog, elf.bytes);
  const gone = join(dir, "not-written", "gone.so");
  const file = new PtFile({ perfScript: true });
  const clock = file.otherEvent("cpu-clock", 1, 0n, true);
  file
    .kernelMmap("[kernel.kallsyms]_text", KERNEL, 0x100_0000n, KERNEL)
    .comm(100, "prog", TRACE_TSC - 100n)
    .mmap2(100, BASE, 0x1000n, BigInt(elf.segOffsets[0]!), prog, TRACE_TSC - 50n)
    // With a build id, as perf records it (without, perf would read its own process's vDSO).
    .mmap2(100, VDSO, 0x2000n, 0n, "[vdso]", TRACE_TSC - 40n, "12".repeat(16))
    .mmap2(100, GONE, 0x10000n, 0x3000n, gone, TRACE_TSC - 30n)
    .itraceStart(100, 100, TRACE_TSC - 10n);
  const ips = [VDSO + 0x9a0n, GONE + 0x1234n, KERNEL + 0x5678n, BASE + 5n, 0x1234n];
  ips.forEach((ip, i) => {
    const chain =
      ip >= KERNEL ? [CONTEXT_KERNEL, ip, CONTEXT_USER, GONE + 0x40n] : [CONTEXT_USER, ip, VDSO + 0x10n];
    file.sample(clock, 100, 100, TRACE_TSC + 1000n + BigInt(i), 0, ip, 10000n, chain);
  });
  file.trace(traceOf(exec));
  const data = join(dir, "unbacked.data");
  writeFileSync(data, fileMode(file.built()));
  const args = ["--itrace=e", "-F", "ip,sym,symoff,dso"];
  const got = ptkitPerf(["-i", data, ...args]);
  assert.equal(got.status, 0, got.err);
  // perf names each mapping (6.1, checked below where perf is installed). In callchains a
  // user-space address shows as its offset in the mapped file (gone.so is mapped from 0x3000).
  for (const line of [
    "\t             9a0 [unknown] ([vdso])",
    `\t            4234 [unknown] (${gone})`,
    "\tffffffff81005678 [unknown] ([kernel.kallsyms])",
    `\t            3040 [unknown] (${gone})`,
    "\t            1234 [unknown] ([unknown])",
  ])
    assert.ok(got.out.includes(`${line}\n`), `${line} in:\n${got.out}`);
  if (noPerf) return;
  // perf names kernel addresses from this host's /proc/kallsyms: not this file's kernel, not compared.
  const hostKernel = (out: string) =>
    out.replace(/^(\tffffffff81005678) \S+ \(\[kernel\.kallsyms\]\)$/gm, "$1 [unknown] ([kernel.kallsyms])");
  for (const more of [args, ["--itrace=e"]]) {
    const want = perfScript(data, more);
    assert.equal(want.status, 0, want.err);
    assert.equal(ptkitPerf(["-i", data, ...more]).out, hostKernel(want.out), more.join(" "));
  }
});

/**
 * `perf record -N -e cpu-clock:u -c 20000 [MORE] -- prog` into `name`: the file, or why
 * it could not record; with `cache`, without -N: the binaries go to its ~/.debug.
 */
function perfRecord(
  name: string,
  prog: string,
  more: string[] = [],
  cache?: string,
): { data: string } | { why: string } {
  const data = join(dir, name);
  const r = spawnSync(
    "perf",
    [
      "record",
      ...(cache ? [] : ["-N"]),
      "-q",
      "-o",
      data,
      "-e",
      "cpu-clock:u",
      "-c",
      "20000",
      ...more,
      "--",
      prog,
    ],
    {
      encoding: "utf8",
      env: { ...process.env, HOME: cache ?? EMPTY_HOME },
    },
  );
  if (r.status === 0) return { data };
  return { why: `perf record failed here (${r.stderr.split("\n")[0] || `status ${r.status}`})` };
}

/** `prog.c` built with gcc FLAGS into `name`. */
function gcc(name: string, source: string, flags: string[]): string {
  const src = join(dir, `${name}.c`);
  writeFileSync(src, source);
  const out = join(dir, name);
  const r = spawnSync("gcc", ["-O1", "-fno-builtin", ...flags, "-o", out, src], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return out;
}

const PLT_LOOP = `#include <stdlib.h>
int main(void) { long s = 0; for (int i = 0; i < 1000000; i++) { s += labs(i - 5); s += abs(i); } return (int)(s & 1); }
`;
const VDSO_LOOP = `#include <time.h>
int main(void) { struct timespec t; long s = 0; for (int i = 0; i < 100000; i++) { clock_gettime(CLOCK_MONOTONIC, &t); s += t.tv_nsec; } return (int)(s & 1); }
`;

test("recordings of gcc-built programs: PLT stubs, aliases, [vdso], a deleted binary as perf script names them", {
  skip: noPerf || noGcc,
}, (t) => {
  const fields = ["-F", "comm,tid,ip,sym,symoff,dso"];
  const builds: Array<[string, string[]]> = [
    ["lazy", []],
    ["nopie", ["-no-pie"]],
    ["ibt", ["-fcf-protection", "-Wl,-z,ibtplt"]],
  ];
  for (const [name, flags] of builds) {
    const rec = perfRecord(`${name}.data`, gcc(name, PLT_LOOP, flags));
    if ("why" in rec) {
      t.skip(rec.why);
      return;
    }
    samePerfScript(rec.data, [fields]);
  }
  // --symfs: perf reads the binaries under it only (none there: no names, the same dso names).
  samePerfScript(join(dir, "lazy.data"), [["--symfs", mkdtempSync(join(dir, "symfs-")), ...fields]]);
  const chains = perfRecord("lazy-g.data", join(dir, "lazy"), ["-g"]);
  if ("why" in chains) return;
  samePerfScript(chains.data, [[], fields]);
  const vdso = perfRecord("vdso.data", gcc("vdso", VDSO_LOOP, []));
  if ("why" in vdso) return;
  samePerfScript(vdso.data, [fields]);
  // Recorded into a build-id cache (~/.debug/[vdso]/<id>/vdso): perf names the vDSO's
  // symbols from its .dynsym, without versions (__vdso_clock_gettime).
  const home = mkdtempSync(join(dir, "home-"));
  const cached = perfRecord("vdso-cache.data", join(dir, "vdso"), [], home);
  if ("why" in cached) return;
  for (const args of [fields, []]) {
    const want = perfScript(cached.data, args, home);
    assert.equal(want.status, 0, want.err);
    assert.equal(ptkitPerf(["-i", cached.data, ...args], home).out, want.out, args.join(" "));
  }
  // A binary gone since its recording: perf names it by its recorded path.
  const doomed = join(dir, "doomed");
  copyFileSync(join(dir, "lazy"), doomed);
  const deleted = perfRecord("deleted.data", doomed);
  unlinkSync(doomed);
  if ("why" in deleted) return;
  const out = samePerfScript(deleted.data, [fields]);
  assert.ok(out.includes(`[unknown] (${doomed})\n`), "the deleted binary's samples are named by its path");
});
