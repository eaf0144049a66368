/**
 * Settling a disagreement in the seeds: step 3 of the SDM's recipe for a decoder's
 * CALL/RET stack (seed 000) reads "for near RETs, pop the top entry", every RET;
 * libipt (and perf) pop only for a RET they see compressed (a taken TNT bit), and the
 * model pops only when it compresses (GenOptions.retPop). The two readings part after
 * a RET whose target is not its CALL's next IP: here A calls B (0x401105 pushed), B
 * returns elsewhere (0x401200 → 0x401300, a TIP), and 0x401300's RET goes back to A's
 * caller (0x401005). A processor that popped for B's RET compresses that last RET;
 * the decoders, whose stacks still hold 0x401105, then go to 0x401105. With the
 * model's reading both decoders give back the execution.
 */
// test:quick skips this file: compiles and runs the libipt harness.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { Image } from "../../../src/image/index.js";
import { buildLibiptHarness, runInsnDecoder } from "../../../tools/libipt/harness.js";
import { runInsns } from "../../flow/run.js";
import { afterPsb, BRANCHES, genBytes, insn, jsonl, packetList } from "./helpers.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-retpop-"));
const build = buildLibiptHarness(dir);
if ("error" in build) throw new Error(build.error);
const skip = "skip" in build ? build.skip : false;
const bin = "bin" in build ? build.bin : "";

const BASE = 0x401000;
/** The code: call 0x401100; nop; hlt | call 0x401200; ret | ret | ret. */
const code = new Uint8Array(0x400);
code.set([0xe8, 0xfb, 0x00, 0x00, 0x00, 0x90, 0xf4], 0x000);
code.set([0xe8, 0xfb, 0x00, 0x00, 0x00, 0xc3], 0x100);
code.set([0xc3], 0x200);
code.set([0xc3], 0x300);

/** The execution: the RET at 0x401200 goes to 0x401300, not to 0x401105. */
const execution = jsonl(
  { k: "cpl", cpl: 3 },
  insn(0x401000, 5, "call"),
  insn(0x401100, 5, "call"),
  insn(0x401200, 1, "return"),
  insn(0x401300, 1, "return"),
  insn(0x401005, 1),
  insn(0x401006, 1),
);
const ran = ["0x401000", "0x401100", "0x401200", "0x401300", "0x401005", "0x401006"];

function decodeBoth(trace: Uint8Array, tag: string): { ptkit: string[]; libipt: string[] } {
  const image = new Image();
  image.addRaw("code", code, 0, BASE);
  const ptkit = runInsns(trace, { image }).ips.map((ip) => `0x${ip.toString(16)}`);
  const codeFile = join(dir, "code.bin");
  const traceFile = join(dir, `${tag}.pt`);
  writeFileSync(codeFile, code);
  writeFileSync(traceFile, trace);
  const out = runInsnDecoder(bin, traceFile, [`${codeFile}:${BASE}`]);
  assert.ok(Array.isArray(out), JSON.stringify(out));
  return { ptkit, libipt: out.filter((l) => l.startsWith("I ")).map((l) => l.split(" ")[1]!) };
}

describe("RET compression: which RETs pop the processor's stack", { skip }, () => {
  test("popping only for compressed RETs (the model): the last RET is a TIP, both decoders follow the run", () => {
    const trace = genBytes(execution, { ctl: { ...BRANCHES, OS: 0 } });
    assert.deepEqual(afterPsb(packetList(trace)).slice(0, 2), ["tip 0x401300", "tip 0x401005"]);
    const d = decodeBoth(trace, "compressed");
    assert.deepEqual(d.ptkit, ran);
    assert.deepEqual(d.libipt, ran);
  });

  test("popping for every RET (the seeds' step 3): the last RET is compressed, and both decoders go astray there", () => {
    const trace = genBytes(execution, { ctl: { ...BRANCHES, OS: 0 } }, { retPop: "every" });
    assert.deepEqual(afterPsb(packetList(trace)).slice(0, 2), ["tip 0x401300", "tnt T"]);
    const d = decodeBoth(trace, "every");
    for (const ips of [d.ptkit, d.libipt]) {
      assert.deepEqual(ips.slice(0, 4), ran.slice(0, 4));
      // The compressed RET takes the top of the decoders' stacks: B's return address.
      assert.equal(ips[4], "0x401105");
    }
  });
});
