/**
 * perf script's lines where a binary of the process cannot be found (a library not
 * copied along, JIT code): perf 6.1's decoder reports the first two failures to read
 * its code ("Failed to get instruction"; then dso__data_status_seen makes it go on
 * without a word), shows the branch into that code, forgets the last IP (its state
 * NO_IP) and takes up again at the next packet that gives an address whole (a TIP or
 * FUP with IPBytes 011b or 110b) or at a PSB, with a trace start (tr strt) there when
 * that was a TIP or the PSB its failed walk was heading for. ptkit perf with perf
 * script's options does the same (StreamContext.perfResync), where it used to go on at
 * the next PSB only: on the bench's perf.data without libb.so it printed 5.8 thousand
 * of perf's 273 thousand call lines. The benchmark's perf.data workload (one CPU, and
 * two), small, with its libb.so (or its program) removed: ptkit's lines against perf
 * script's, byte for byte, where perf is installed. ptkit's own outputs but its listings go on the same
 * way (the missing binary reported once, at the end): --calls prints perf's call lines,
 * and the folded stacks count the instructions perf lists.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { loadPerfWorkload } from "../../bench/perf-workload.js";
import { okOut, perfScriptRun, ptkitPerfRun } from "./script-runs.js";

const perf = spawnSync("perf", ["version"], { encoding: "utf8" });
const noPerf = perf.status === 0 ? false : "perf is not installed";
const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-missing-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The workload on `cpus` CPUs (made once for each binary left out), its `name` gone. */
function without(cpus: number, name = "libb.so"): string {
  const w = loadPerfWorkload({ seed: 4, insns: 1_000_000, cpus, cacheDir: join(dir, name) });
  const elf = w.elfs.find((e) => e.endsWith(`/${name}`));
  assert.ok(elf, w.elfs.join(", "));
  rmSync(elf, { force: true });
  return w.data;
}

const FIELD_SETS = [
  ["--itrace=cre", "-F", "ip,addr,flags"],
  ["--itrace=be", "-F", "time,ip,addr,flags", "--ns"],
  ["--itrace=i0ns", "-F", "ip"],
  // perf script's default lines: calls, errors, power events (psb lines), every field.
  [],
];

// A library, and the program itself (every user instruction: each decode stops at once).
for (const [name, cpus] of [
  ["libb.so", 1],
  ["libb.so", 2],
  ["main", 1],
] as const)
  test(`${name} cannot be found (${cpus} CPU${cpus > 1 ? "s" : ""}): perf script's lines`, {
    skip: noPerf,
  }, () => {
    const data = without(cpus, name);
    for (const fields of FIELD_SETS) {
      const args = ["-i", data, ...fields];
      const theirs = okOut(perfScriptRun(args, dir), `perf script ${fields.join(" ")}`);
      const ours = ptkitPerfRun(args, dir);
      const out = okOut(ours, `ptkit perf ${fields.join(" ")}`);
      assert.match(
        ours.err,
        new RegExp(`no binary for \\S+/${name.replace(".", "\\.")}: \\d+ addresses needed it`),
      );
      // Not a few lines up to the first error: the whole run.
      assert.ok(theirs.split("\n").length > 1000, `${theirs.split("\n").length} lines`);
      if (out !== theirs) {
        const a = out.split("\n");
        const b = theirs.split("\n");
        const i = a.findIndex((l, k) => l !== b[k]);
        assert.fail(
          `${fields.join(" ")}: line ${i + 1} of ${a.length} (perf ${b.length}):\n${a[i]}\n${b[i]}`,
        );
      }
      // Reported twice (then without a word), however many CPUs ran into it.
      if (fields.length === 0 || fields[0] === "--itrace=cre")
        assert.equal(
          out.split("\n").filter((l) => l.includes("code 5: Failed to get instruction")).length,
          2,
        );
    }
  });

for (const cpus of [1, 2])
  test(`a library that cannot be found (${cpus} CPU${cpus > 1 ? "s" : ""}): ptkit's own outputs go on as perf does`, {
    skip: noPerf,
  }, () => {
    const data = without(cpus);
    const theirs = okOut(
      perfScriptRun(["-i", data, "--itrace=cr", "-F", "ip,addr,flags"], dir),
      "perf script",
    );
    const calls = ptkitPerfRun(["--calls", data], dir);
    assert.equal(
      okOut(calls, "ptkit perf --calls"),
      theirs
        .split("\n")
        .filter((l) => !l.includes("instruction trace error"))
        .join("\n"),
    );
    assert.doesNotMatch(calls.out, /no memory mapped/);
    const insns = okOut(perfScriptRun(["-i", data, "--itrace=i0ns", "-F", "ip"], dir), "perf script")
      .split("\n")
      .filter((l) => l.trim() !== "").length;
    const folded = ptkitPerfRun(["-q", "--folded", "folded.txt", data], dir);
    okOut(folded, "ptkit perf --folded");
    assert.match(folded.out + folded.err, new RegExp(`wrote folded\\.txt: ${insns} instructions`));
  });
