/**
 * Call stacks against ground truth: the bundled sample (sample/, a program of ptkit's
 * own whose trace the trace-unit model made) records per function how many times it
 * was called and how many instructions ran in it, and the deepest nesting, counted from
 * the execution itself. `ptkit flow --symbols` with folded stacks and JSON Lines must
 * give the same numbers.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { main } from "../../src/cli/ptkit.js";
import { captureIo } from "../conformance/ptt.js";
import { REPO_ROOT } from "../corpus.js";

const SAMPLE_DIR = join(REPO_ROOT, "sample");

interface SampleFunction {
  name: string;
  insns: number;
  calls: number;
}

test("the sample's calls, instructions per function and depth match its execution", async (t) => {
  if (!existsSync(join(SAMPLE_DIR, "sample.json"))) {
    t.skip(`no bundled sample in ${SAMPLE_DIR}`);
    return;
  }
  const about = JSON.parse(readFileSync(join(SAMPLE_DIR, "sample.json"), "utf8"));
  const truth = about.execution.userMode as { functions: SampleFunction[]; maxDepth: number; far: number };
  const d = about.decode;
  const dir = mkdtempSync(join(tmpdir(), "ptkit-sample-stacks-"));
  const io = captureIo(dir);
  const status = await main(
    [
      "flow",
      "--elf",
      join(SAMPLE_DIR, about.program),
      "--mtc-freq",
      `${d.mtcFreq}`,
      "--nom-freq",
      `${d.nomFreq}`,
      "--pt",
      join(SAMPLE_DIR, about.trace),
      "--quiet",
      "--symbols",
      "--folded",
      "stacks.folded",
      "--jsonl",
      "flow.jsonl",
    ],
    io,
  );
  assert.equal(status, 0, io.err.join(""));
  const calls = new Map<string, number>();
  let far = 0;
  let deepest = 0;
  for (const line of readFileSync(join(dir, "flow.jsonl"), "utf8").split("\n")) {
    if (!line.startsWith('{"type":"call"')) continue;
    const c = JSON.parse(line) as { frame: string; name?: string; depth: number };
    if (c.frame === "call") calls.set(c.name!, (calls.get(c.name!) ?? 0) + 1);
    if (c.frame === "far") far++;
    deepest = Math.max(deepest, c.depth);
  }
  const insns = new Map<string, number>();
  for (const line of readFileSync(join(dir, "stacks.folded"), "utf8").trim().split("\n")) {
    const [path, weight] = [
      line.slice(0, line.lastIndexOf(" ")),
      Number(line.slice(line.lastIndexOf(" ") + 1)),
    ];
    const leaf = path.slice(path.lastIndexOf(";") + 1);
    insns.set(leaf, (insns.get(leaf) ?? 0) + weight);
  }
  for (const f of truth.functions) {
    assert.equal(calls.get(f.name) ?? 0, f.calls, `calls of ${f.name}`);
    assert.equal(insns.get(f.name) ?? 0, f.insns, `instructions in ${f.name}`);
  }
  assert.equal(far, truth.far);
  // Depth counts _start's root frame, which the execution's depth does not.
  assert.equal(deepest - 1, truth.maxDepth);
});
