/**
 * The fuzzer's worker on real ptkit runs: a clean case passes, and the past-end check
 * tells bytes before a range's end (output may change) from bytes after it (must not).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { msrBytes } from "../../tools/fuzz/seeds.js";
import { type Case, INPUT } from "../../tools/fuzz/types.js";
import { runCase } from "../../tools/fuzz/worker.js";
import { Trace } from "../event/helpers.js";

const TRACE = new Trace()
  .psb()
  .psbend()
  .pge(0x401000n)
  .tnt("!.!")
  .tip(0x402000n)
  .pgd()
  .psb()
  .psbend()
  .bytes();

async function withScratch(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-fuzz-test-"));
  const cwd = process.cwd();
  try {
    await fn(dir);
  } finally {
    process.chdir(cwd);
    rmSync(dir, { recursive: true, force: true });
  }
}

function dumpCase(dir: string, argv: string[], variant?: Uint8Array): Case {
  return {
    index: 0,
    format: "raw",
    seed: "t",
    what: [],
    input: TRACE,
    inputName: "t.pt",
    cwd: dir,
    argv,
    ...(variant ? { variant } : {}),
  };
}

test("a ptkit command and the library drivers pass on good input", async () => {
  await withScratch(async (dir) => {
    assert.deepEqual(await runCase(dumpCase(dir, ["dump", INPUT]), dir), { ok: true });
    assert.deepEqual(await runCase(dumpCase(dir, ["stats", INPUT]), dir), { ok: true });
    const lib = (driver: Case["driver"], input: Uint8Array) =>
      runCase(
        {
          index: 0,
          format: "x",
          seed: "t",
          what: [],
          input,
          inputName: "x",
          cwd: dir,
          ...(driver ? { driver } : {}),
        },
        dir,
      );
    assert.deepEqual(await lib("event", TRACE), { ok: true });
    assert.deepEqual(await lib("msr", msrBytes([[2, 0x2e0dn]])), { ok: true });
    // Bad input is normal input: reported through the layer's errors, not a failure.
    assert.deepEqual(await lib("elf", new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 2, 1])), { ok: true });
    assert.deepEqual(await lib("exec-binary", new Uint8Array(3)), { ok: true });
  });
});

test("past the end: bytes after `to` must not matter; bytes before it may", async () => {
  await withScratch(async (dir) => {
    const to = TRACE.length - 4;
    const argv = ["dump", `${INPUT}:0x0-0x${to.toString(16)}`];
    const after = TRACE.slice();
    after.fill(0x55, to);
    assert.deepEqual(await runCase(dumpCase(dir, argv, after), dir), { ok: true });
    // A change before `to` changes the output: what a reader that looked past the end would show.
    const before = TRACE.slice();
    before[1] = 0x00; // the first PSB is gone
    const r = await runCase(dumpCase(dir, argv, before), dir);
    assert.equal(r.ok, false);
    assert.equal(!r.ok && r.failure.kind, "past-end");
  });
});
