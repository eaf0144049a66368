/**
 * The raw-trace pipeline driven as a front end other than the CLI drives it: the
 * files in a FilesIo, the steps made without ptxed's option words. Its listing is
 * `ptkit flow`'s for the same code, trace and settings.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { runFlow } from "../../src/cli/flow/flow.js";
import { parseCpu } from "../../src/cpu/index.js";
import { defaultDecoderConfig } from "../../src/event/index.js";
import { bytesSource } from "../../src/perf/index.js";
import {
  decodeRaw,
  defaultAnalysisOptions,
  defaultFlowOutput,
  defaultSidebandOptions,
  FilesIo,
  type RawStep,
  setupRaw,
} from "../../src/session/index.js";
import { LineWriter } from "../../src/session/io.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";

const DR = ["real", "dynamorio-drpt2trace", "test_simple.raw"];

describe("decodeRaw over a FilesIo", { skip: skipUnlessCorpus(...DR) }, () => {
  const dir = corpusPath(...DR)!;

  for (const decoder of ["block", "insn"] as const)
    test(`the ${decoder} decoder's listing is ptkit flow's`, async () => {
      const io = new FilesIo();
      for (const n of ["pt.bin", "hello"]) io.add(n, bytesSource(readFileSync(join(dir, n))));
      const config = { ...defaultDecoderConfig(), mtcFreq: 3, nomFreq: 37, cpuid15Eax: 2, cpuid15Ebx: 308 };
      const steps: RawStep[] = [
        { kind: "elf", file: { name: "hello", base: undefined }, verbose: true },
        {
          kind: "pt",
          range: { path: "pt.bin", from: 0, to: undefined },
          decoder,
          cpu: parseCpu("6/85/4"),
          config,
        },
      ];
      const output = { ...defaultFlowOutput(), time: true, stats: true, statInsn: true };
      const input = { steps, output, sideband: defaultSidebandOptions(), analysis: defaultAnalysisOptions() };
      const warnings: string[] = [];
      const out = new LineWriter((t) => io.stdout(t));
      const setup = setupRaw(io, out, input, (w) => warnings.push(w));
      assert.equal(typeof setup, "object", String(setup));
      if (typeof setup === "string") return;
      assert.equal(await decodeRaw(io, out, setup, { warn: (w) => warnings.push(w) }), undefined);
      assert.deepEqual(warnings, []);

      const cli = captureIo(dir);
      const argv = [
        ...["--cpu", "6/85/4", "--mtc-freq", "3", "--nom-freq", "37"],
        ...["--cpuid-0x15.eax", "2", "--cpuid-0x15.ebx", "308", `--${decoder}-decoder`],
        ...["--verbose", "--elf", "hello", "--pt", "pt.bin", "--time", "--stat:insn"],
      ];
      assert.equal(await runFlow(argv, cli), 0, cli.err.join(""));
      const listing = io.stdoutText;
      assert.equal(listing, cli.out.join(""));
      assert.match(listing, /^hello: offset=0x0 size=0x\S+ vaddr=0x\S+\.$/m);
      assert.match(listing, /^[0-9a-f]{16} {2}[0-9a-f]{16} {2}\S/m);
      assert.match(listing, /^insn: 8\.$/m);
    });

  test("without a trace step: an error in words", async () => {
    const io = new FilesIo();
    io.add("hello", bytesSource(readFileSync(join(dir, "hello"))));
    const input = {
      steps: [{ kind: "elf", file: { name: "hello", base: undefined }, verbose: false }] as RawStep[],
      output: defaultFlowOutput(),
      sideband: defaultSidebandOptions(),
      analysis: defaultAnalysisOptions(),
    };
    const out = new LineWriter((t) => io.stdout(t));
    const setup = setupRaw(io, out, input, () => {});
    assert.ok(typeof setup === "object");
    assert.equal(await decodeRaw(io, out, setup, { warn: () => {} }), "no trace file to decode.");
  });
});
