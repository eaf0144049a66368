/**
 * A real capture decoded where nothing it ran is here (the quipper corpus's
 * `perf record -e intel_pt//` of `echo` on Linux 4.14: the kernel traced without its
 * code, the program and its libraries not copied along), against perf script where
 * perf is installed. Most of it is Linux perf's resync after each failure: the
 * interrupts (the cycles event's PMIs, the page faults) whose FUP came whole are trace
 * starts at that FUP, at its time; the kernel's entry trampoline at 0xfffffe0000000000,
 * which no kernel mmap of the file covers, is an error each time; a library mapped
 * over the dynamic loader's reservation is that library's; the CR3 switch before the
 * trampoline's jump is passed by, so the error has the jump's time; a transaction's
 * FUP (glibc's lock elision, aborting) is a trace start, its abort's TIP any TIP.
 *
 * Compared: perf's branch lines with time and dso, and perf script's default lines,
 * the error lines left out, byte for byte; and every error line perf prints printed by
 * ptkit too (perf prints one error fewer for the kernel, ld.so and the program: see
 * the README's perf section).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { okOut, perfScriptRun, ptkitPerfRun } from "./script-runs.js";

const perf = spawnSync("perf", ["version"], { encoding: "utf8" });
const QUIPPER = ["real", "quipper-perf-data", "perf.data.intel_pt-4.14"] as const;
const skip = perf.status === 0 ? skipUnlessCorpus(...QUIPPER) : "perf is not installed";
const dir = mkdtempSync(join(tmpdir(), "ptkit-quipper-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const isError = (l: string) => l.startsWith(" instruction trace error");

/** How many times each line occurs. */
function counts(lines: readonly string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const l of lines) m.set(l, (m.get(l) ?? 0) + 1);
  return m;
}

for (const fields of [["--itrace=be", "-F", "time,ip,addr,flags,dso", "--ns"], []])
  test(`the quipper capture without its binaries: perf script ${fields.join(" ") || "(default lines)"}`, {
    skip,
  }, () => {
    const args = ["-i", corpusPath(...QUIPPER)!, ...fields];
    const theirs = okOut(perfScriptRun(args, dir), "perf script").split("\n");
    const ours = okOut(ptkitPerfRun(args, dir), "ptkit perf").split("\n");
    const theirLines = theirs.filter((l) => !isError(l));
    const ourLines = ours.filter((l) => !isError(l));
    assert.ok(theirLines.length > 20, `${theirLines.length} lines`);
    for (let i = 0; i < Math.max(ourLines.length, theirLines.length); i++)
      assert.equal(ourLines[i], theirLines[i], `line ${i + 1} (error lines left out)`);
    // perf's errors, each as often: the entry trampoline's (in no kernel mmap) each time.
    const ourErrors = counts(ours.filter(isError));
    const theirErrors = counts(theirs.filter(isError));
    const trampoline = [...theirErrors].filter(([l]) => l.includes("ip 0xfffffe000008a000"));
    assert.ok(trampoline.reduce((n, [, c]) => n + c, 0) > 10, "errors at the entry trampoline");
    for (const [line, n] of theirErrors) assert.equal(ourErrors.get(line) ?? 0, n, line);
  });
