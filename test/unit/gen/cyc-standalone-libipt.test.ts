/**
 * Stand-alone CYC packets decoded by Debian's libipt 2.0.5 (tools/libipt/harness.c
 * --insn): the instructions, and no error (cyc-standalone.test.ts has the packets).
 */
// test:quick skips this file: compiles and runs the libipt harness.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { buildLibiptHarness, runInsnDecoder } from "../../../tools/libipt/harness.js";
import { BRANCHES, genBytes, insn, jsonl } from "./helpers.js";

const MAX = 2 ** 15 - 1;
/** nop; `n` cycles pass; nop; the trace ends after it. */
const run = (n: number) =>
  jsonl(insn(0x1000, 1), { k: "cycles", n }, insn(0x1001, 1), { k: "end", ip: "0x1002" });

const dir = mkdtempSync(join(tmpdir(), "ptkit-cyc-"));
const build = buildLibiptHarness(dir);
if ("error" in build) throw new Error(build.error);
const skip = "skip" in build ? build.skip : false;

describe("stand-alone CYC: libipt decodes the trace", { skip }, () => {
  test("the same instructions, no errors", () => {
    const bin = "bin" in build ? build.bin : "";
    const code = join(dir, "code.bin");
    const trace = join(dir, "trace.pt");
    writeFileSync(code, Uint8Array.from([0x90, 0x90]));
    writeFileSync(trace, genBytes(run(5 * MAX), { ctl: { ...BRANCHES, CYCEn: 1 } }, { cycCounterBits: 15 }));
    const out = runInsnDecoder(bin, trace, [`${code}:0x1000`]);
    assert.ok(Array.isArray(out), JSON.stringify(out));
    assert.deepEqual(
      out.filter((l) => l.startsWith("I ")).map((l) => l.split(" ")[1]),
      ["0x1000", "0x1001"],
    );
    assert.deepEqual(
      out.filter((l) => l.startsWith("E ") || l.startsWith("X ")),
      [],
    );
  });
});
