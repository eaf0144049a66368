/**
 * perf script's time estimates for branches from the kernel into user space (issue
 * 15): perf times each (a sysret, an iret) by its decoder's time plus 2 TSC ticks x
 * nominal ratio / CBR per instruction walked since that time moved, and what follows
 * keeps that time until the decoder's passes it. A generated recording of kernel and
 * user (test/perf/estimate-files.ts): ptkit perf's lines against perf script's, byte
 * for byte where perf is installed; the estimate's value everywhere.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { TRACE_TSC } from "../../tools/perf/pt-file.js";
import { kernelUserFile } from "./estimate-files.js";
import { okOut, perfScriptRun, ptkitPerfRun } from "./script-runs.js";

const perf = spawnSync("perf", ["version"], { encoding: "utf8" });
const noPerf = perf.status === 0 ? false : "perf is not installed";
const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-estimates-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function ptkit(args: string[]): string {
  const r = ptkitPerfRun(args, dir);
  assert.equal(r.err, "");
  return okOut(r);
}

/** perf time (--ns) of TSC `tsc` (the file's TIME_CONV is the identity). */
const ns = (tsc: bigint) => `${tsc / 1_000_000_000n}.${(tsc % 1_000_000_000n).toString().padStart(9, "0")}`;
const timeOf = (line: string) => line.trim().split(/\s+/)[0]!.replace(/:$/, "");

test("a sysret into user space has perf's estimated time, and the branches after it keep it", () => {
  // Timed by MTC alone: no timing packet after the PSB's TSC for the first turns.
  const { data, vmlinux } = kernelUserFile(dir, false);
  const out = ptkit(["--vmlinux", vmlinux, "-i", data, "--itrace=be", "-F", "time,ip,addr,flags", "--ns"]);
  const lines = out.split("\n").filter((l) => l.includes("=>"));
  const sysrets = lines.filter((l) => l.includes("sysret"));
  assert.ok(sysrets.length >= 2);
  // Before the first sysret: the PSB's time (the syscall, the kernel's jumps).
  const first = lines.indexOf(sysrets[0]!);
  assert.ok(first >= 3);
  for (const l of lines.slice(0, first)) assert.equal(timeOf(l), ns(TRACE_TSC), l);
  // mov ecx; syscall; mov eax; 3 x (dec, jnz); sysret: 10 instructions since that time,
  // at the file's nominal ratio 37 and CBR 40.
  assert.equal(timeOf(sysrets[0]!), ns(TRACE_TSC + BigInt(Math.floor((2 * 10 * 37) / 40))));
  // The jcc after it (in user space, no packet since) keeps the estimate.
  assert.equal(timeOf(lines[first + 1]!), timeOf(sysrets[0]!));
  // The next turn's: 11 more (dec, jnz, syscall, the kernel's 8).
  assert.equal(timeOf(sysrets[1]!), ns(TRACE_TSC + BigInt(Math.floor((2 * 21 * 37) / 40))));
  // Never backwards.
  const times = lines.map(timeOf);
  for (let i = 1; i < times.length; i++) assert.ok(times[i - 1]! <= times[i]!, `line ${i}`);
});

// (With a switch IP perf syncs thread switches to it, and perf 6.1 keeps its estimates.)
test("kernel and user traced: perf script's lines, branches and instruction samples, byte for byte", {
  skip: noPerf,
}, () => {
  for (const [cyc, switchIp] of [
    [true, false],
    [false, false],
    [false, true],
    [true, true],
  ]) {
    const { data, vmlinux } = kernelUserFile(dir, cyc!, { switchIp });
    for (const extra of [
      ["--call-trace"],
      [],
      ["--itrace=be", "-F", "time,ip,addr,flags", "--ns"],
      ["--itrace=i1us", "-F", "time,ip,period", "--ns"],
      ["--itrace=i100ns", "-F", "time,ip,period", "--ns"],
      ["--itrace=i1usbe", "-F", "time,ip,period,addr,flags", "--ns"],
    ]) {
      const args = ["--vmlinux", vmlinux, "-i", data, ...extra];
      assert.equal(
        ptkit(args),
        okOut(perfScriptRun(args, dir), "perf script"),
        `${cyc ? "CYC" : "MTC"}${switchIp ? ", switch IP" : ""}: ${extra}`,
      );
    }
  }
});
