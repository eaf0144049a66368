/**
 * A perf.data file's TSC conversion is input, not truth: the regressions corpus's
 * HASE captures with a corrupt TIME_CONV time_shift (perf-1.bin: 2^49 + 31, once
 * a RangeError with a stack; perf-2.bin: 2^29 - 7, once a 64 MiB BigInt per
 * conversion) decode as the intact file does, with AUXTRACE_INFO's conversion and
 * one warning naming the file and the record's offset; with both corrupt, decoding
 * goes on without a conversion.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { runPerfDump } from "../../src/cli/perf/dump.js";
import { runPerf } from "../../src/cli/perf/perf.js";
import { tscConversionProblem } from "../../src/perf/index.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { EMPTY_HOME } from "./home.js";

const CAPTURE = ["real", "hase", "2018-05", "loopy-20180514T145114"];
const INTACT = [...CAPTURE, "perf.data.1"];
/** File offsets in the capture: the TIME_CONV record, and AUXTRACE_INFO's time_shift word. */
const TIME_CONV_AT = 0x248;
const INFO_SHIFT_AT = 0x268 + 16 + 8;

const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-timeconv-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function perf(file: string): { code: number; out: string; err: string } {
  const io = captureIo(dir);
  const code = runPerf(["--jsonl", "--symfs", corpusPath(...CAPTURE, "binaries")!, file], io, EMPTY_HOME);
  return { code, out: io.out.join(""), err: io.err.join("") };
}

for (const [name, shift] of [
  ["perf-1.bin", 2 ** 49 + 31],
  ["perf-2.bin", 2 ** 29 - 7],
] as const) {
  test(`${name}: a corrupt TIME_CONV time_shift falls back to AUXTRACE_INFO's`, {
    skip: skipUnlessCorpus("regressions", name) || skipUnlessCorpus(...INTACT),
  }, () => {
    const file = corpusPath("regressions", name)!;
    const r = perf(file);
    assert.equal(r.code, 0);
    assert.equal(
      r.err,
      `ptkit perf: warning: ${file}: TIME_CONV time_shift ${shift} is corrupt (perf writes 0 to 63) ` +
        `at offset 0x${TIME_CONV_AT.toString(16)}: using AUXTRACE_INFO's TSC conversion instead.\n`,
    );
    const intact = perf(corpusPath(...INTACT)!);
    assert.equal(intact.err, "");
    assert.match(intact.out, /"time":"\d+\.\d{9}"/, "the output has perf times");
    assert.equal(r.out, intact.out);
  });
}

test("both conversions corrupt: a warning for each, the trace decoded without perf times", {
  skip: skipUnlessCorpus(...INTACT),
}, () => {
  const bytes = new Uint8Array(readFileSync(corpusPath(...INTACT)!));
  bytes[TIME_CONV_AT + 8 + 6] = 2; // time_shift 31 + 2^49, as perf-1.bin
  bytes[INFO_SHIFT_AT] = 64;
  writeFileSync(join(dir, "both.data"), bytes);
  const r = perf("both.data");
  assert.equal(r.code, 0);
  const lines = r.err.trimEnd().split("\n");
  assert.equal(lines.length, 2, r.err);
  assert.match(
    lines[0]!,
    /^ptkit perf: warning: both\.data: TIME_CONV time_shift \d+ is corrupt .* at offset 0x248: /,
  );
  assert.match(
    lines[1]!,
    /^ptkit perf: warning: both\.data: AUXTRACE_INFO time_shift 64 is corrupt .* at offset 0x268: /,
  );
  for (const l of lines) assert.match(l, /: decoding without TSC conversion \(/);
  // Sideband times cannot be placed in the trace: the trace is still decoded, without perf times.
  assert.match(r.out, /^\{"type":"stream","idx":1,"cpu":1,"bytes":648\}$/m);
  assert.match(r.out, /"text":"\[enabled\]"/);
  assert.doesNotMatch(r.out, /"time":"\d/);
});

test("perf-dump lists the corrupt time_shift with its offset", {
  skip: skipUnlessCorpus("regressions", "perf-1.bin") || skipUnlessCorpus(...INTACT),
}, () => {
  const dump = (file: string) => {
    const io = captureIo(dir);
    assert.equal(runPerfDump([file], io), 0);
    return io.out.join("");
  };
  assert.match(
    dump(corpusPath("regressions", "perf-1.bin")!),
    /^0x248 \[0x20\]: PERF_RECORD_TIME_CONV timeShift=562949953421343 .*\n\[248: time_shift 562949953421343 is corrupt \(perf writes 0 to 63\)\]$/m,
  );
  assert.doesNotMatch(dump(corpusPath(...INTACT)!), /corrupt/);
});

test("tscConversionProblem accepts what the kernel gives and nothing larger", () => {
  const c = { timeShift: 31, timeMult: 827867304n, timeZero: 0n };
  assert.equal(tscConversionProblem(c), undefined);
  assert.equal(tscConversionProblem({ ...c, timeShift: 63, timeMult: 0xffffffffn }), undefined);
  assert.match(tscConversionProblem({ ...c, timeShift: 64 })!, /time_shift 64 is corrupt/);
  assert.match(tscConversionProblem({ ...c, timeMult: 1n << 32n })!, /time_mult 4294967296 is corrupt/);
});
