/**
 * Regression (issue 11, bug 12): code with undefined opcodes, here a page ending in
 * 0xFF bytes, is walked with libipt's instruction lengths (FF FF is FF /7, 2 bytes)
 * as ptxed walks it, up to the same error; ptkit used to stop at the first FF FF with
 * "unknown instruction". libipt's own instruction flow decoder (tools/libipt/harness.c
 * --insn) is run on the same trace and image when libipt-dev is installed.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { Image } from "../../src/image/index.js";
import { buildLibiptHarness, runInsnDecoder } from "../../tools/libipt/harness.js";
import { Trace } from "../event/helpers.js";
import { addCode } from "./asm.js";
import { runBlocks, runInsns } from "./run.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-undefined-opcodes-"));
after(() => rmSync(dir, { recursive: true, force: true }));

// 0x1000: mov rbx, rax; 0x1003: nop; then 0xFF up to the end of the mapping at 0x100a.
const CODE = Uint8Array.of(0x48, 0x89, 0xc3, 0x90, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
// A TNT after the PSB+ so that the decoders do not stop at the end of the trace first.
const TRACE = new Trace().psb().mode(64).fup(0x1000n).psbend().tnt("!").bytes();

test("undefined opcodes have libipt's lengths: FF FF (FF /7) runs on to the end of the code, as in ptxed", () => {
  const image = new Image("code");
  addCode(image, CODE, 0x1000n);
  const insns = runInsns(TRACE, { image });
  const blocks = runBlocks(TRACE, { image });
  assert.deepEqual(insns.ips, [0x1000n, 0x1003n, 0x1004n, 0x1006n, 0x1008n]);
  assert.deepEqual(blocks.lines, insns.lines);
  assert.match(insns.lines.at(-1)!, /^\[error: .*\]$/);
  assert.doesNotMatch(insns.lines.join("\n"), /unknown instruction|decode/i);

  const build = buildLibiptHarness(dir);
  if (!("bin" in build)) return; // libipt-dev missing: the transcript above stands alone
  writeFileSync(join(dir, "code.bin"), CODE);
  writeFileSync(join(dir, "trace.pt"), TRACE);
  const lines = runInsnDecoder(build.bin, join(dir, "trace.pt"), [`${join(dir, "code.bin")}:0x1000`]);
  assert.ok(Array.isArray(lines), "error" in lines ? lines.error : "");
  const ips = lines.filter((l) => l.startsWith("I ")).map((l) => BigInt(l.split(" ")[1]!));
  assert.deepEqual(ips, insns.ips, lines.join("\n"));
  assert.ok(
    lines.some((l) => /^E [0-9a-f]+ \d+ nomap$/.test(l)),
    lines.join("\n"),
  );
});
