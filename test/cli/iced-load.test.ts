/**
 * Decoding instructions needs no iced-x86 (decodeInsn is table-driven): `ptkit flow
 * --quiet --stat` with either decoder and `ptkit perf` (addresses only) run without
 * loading its WebAssembly, which costs about half a second per process; printing
 * instruction text loads it. The flag is per process, and node:test runs each file in
 * a process of its own, the tests in order: the one that prints text comes last.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { runPerf } from "../../src/cli/perf/perf.js";
import { main } from "../../src/cli/ptkit.js";
import { isIcedLoaded } from "../../src/isa/decode.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { EMPTY_HOME } from "../perf/home.js";

const PTT = ["ptt", "ptxed-block-stat"] as const;
const FLOW = [
  "--raw",
  "ptt/ptxed-block-stat/ptxed-block-stat.bin:0x1000",
  "--pt",
  "ptt/ptxed-block-stat/ptxed-block-stat.pt",
];
const HASE = "real/hase/2018-04-04/loopy";

async function flow(...args: string[]): Promise<string> {
  const io = captureIo(corpusPath()!);
  assert.equal(await main(["flow", ...args, ...FLOW], io), 0, io.err.join(""));
  return io.out.join("");
}

describe("iced-x86 is loaded only for instruction text", { skip: skipUnlessCorpus(...PTT) }, () => {
  for (const decoder of ["--block-decoder", "--insn-decoder"])
    test(`flow ${decoder} --quiet --stat decodes without it`, async () => {
      assert.match(await flow(decoder, "--quiet", "--stat"), /^insn: 4\.$/m);
      assert.equal(isIcedLoaded(), false);
    });

  test("perf decodes without it", { skip: skipUnlessCorpus(HASE) }, () => {
    const io = captureIo(corpusPath(HASE)!);
    assert.equal(
      runPerf(["--elf", "loopy", "loopy-20180404T162955.perf"], io, EMPTY_HOME),
      0,
      io.err.join(""),
    );
    assert.ok(io.out.join("").split("\n").length > 50, "instructions decoded");
    assert.equal(isIcedLoaded(), false);
  });

  test("flow with instruction text loads it", async () => {
    assert.match(await flow(), /^0000000000001003 {2}nop$/m);
    assert.equal(isIcedLoaded(), true);
  });
});
