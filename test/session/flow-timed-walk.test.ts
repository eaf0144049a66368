/**
 * `ptkit flow`'s outputs with time (the JSON timeline, the Perfetto trace, folded
 * stacks weighed by time, the latency report) made by the decision graph's timed walk
 * (analysis/coverage-decode.ts, decodeTimedFeed, through raw-session.ts's RawWalkTime)
 * against the flow decoder's general way (the block decoder with tick events through
 * AnalysisUnit): each run both ways must print the same and write the same files, byte
 * for byte (and the coverage JSON beside them), whether the walk covers the trace or
 * hands it over. A walk that hands over has streamed part of the timelines into their
 * files already: they start again empty (AnalysisOutputs.restart), never holding the
 * part twice.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import fc from "fast-check";
import { loadFuzzWorkload } from "../../bench/fuzz-workload.js";
import { largeFlowArgs } from "../../bench/large-workload.js";
import { runFlow } from "../../src/cli/flow/flow.js";
import { captureIo, countInputs, FILTER_OPTIONS, pipeWriters, ptxedInputs } from "../conformance/ptt.js";
import { corpusPath, DR_FLOW_ARGS } from "../corpus.js";
import { cutAndEdited } from "../packet/hostile.js";
import { BRANCHES, type CtlFields } from "../unit/gen/helpers.js";
import { tracedProgram } from "../unit/gen/random-program.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-timed-walk-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Where the outputs go (absolute: the corpus's directories are read-only). */
const out = mkdtempSync(join(dir, "out-"));

/** The outputs with time, and the option that writes each. */
const OUTPUTS: [string, string[]][] = [
  ["the JSON timeline", ["--timeline", join(out, "t.json")]],
  ["the Perfetto trace", ["--perfetto", join(out, "t.perfetto")]],
  ["the folded stacks by time", ["--folded", join(out, "t.folded"), "--folded-weight", "time"]],
  ["the latency report", ["--latency", join(out, "t.latency")]],
  // Beside outputs with time, coverage goes through the call-stack tracker too.
  ["the coverage", ["--coverage", join(out, "t.coverage")]],
];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  files: Buffer[];
  /** The walk's outcome (undefined: it did not run). */
  fast: { status: number; reason: string } | undefined;
}

/** `ptkit flow ...argv` with every output with time, in `cwd`: the walk where it covers the trace, or (`general`) not. */
async function flow(cwd: string, argv: readonly string[], general: boolean): Promise<Run> {
  const io = captureIo(cwd);
  for (const [, [, file]] of OUTPUTS) rmSync(file!, { force: true });
  let fast: Run["fast"];
  const code = await runFlow([...argv, ...OUTPUTS.flatMap(([, o]) => o)], io, {
    generalCoverage: general,
    onFastCoverage: (r) => {
      fast = { status: r.status, reason: r.reason };
    },
  });
  const files = OUTPUTS.map(([, [, file]]) => readFileSync(file!));
  return { code, stdout: io.out.join(""), stderr: io.err.join(""), files, fast };
}

/** Both ways: the same exit code, output and files. The walk's outcome, and the JSON timeline's events. */
async function compare(
  cwd: string,
  argv: readonly string[],
): Promise<{ fast: Run["fast"]; events: number; bytes: number }> {
  const general = await flow(cwd, argv, true);
  const fast = await flow(cwd, argv, false);
  assert.equal(general.fast, undefined, "the general run took the walk");
  assert.equal(fast.code, general.code, `exit code (${fast.stderr}${general.stderr})`);
  assert.equal(fast.stdout, general.stdout, "stdout");
  assert.equal(fast.stderr, general.stderr, "stderr");
  for (const [k, [what]] of OUTPUTS.entries()) {
    const f = fast.files[k]!;
    const g = general.files[k]!;
    assert.ok(f.equals(g), `${what} differ: ${f.length} bytes against ${g.length}`);
  }
  const timeline = general.files[0]!.toString("utf8");
  const events = timeline.length === 0 ? 0 : timeline.split('"ph":"B"').length - 1;
  return { fast: fast.fast, events, bytes: general.files[0]!.length };
}

const w = loadFuzzWorkload({ cacheDir: dir, codeBytes: 16384, traceBytes: 80_000, caseInsns: 20_000 });
const fuzzArgs = ["--quiet", ...largeFlowArgs(w)];

describe("the fuzzing workload with TSC, MTC, CYC and RET compression", () => {
  test("the walk covers it, and writes what the general decode writes", async () => {
    const { fast, events } = await compare(dir, [...fuzzArgs, "--pt", w.timingTrace]);
    assert.deepEqual(fast, { status: 0, reason: "" });
    assert.ok(events > 1000, `${events} frames begun`);
  });

  for (const cpu of ["6/78", "6/85"])
    test(`with a CPU's errata (--cpu ${cpu}): the walk covers it, and writes what the general decode writes`, async () => {
      const { fast } = await compare(dir, ["--cpu", cpu, ...fuzzArgs, "--pt", w.timingTrace]);
      assert.deepEqual(fast, { status: 0, reason: "" });
    });

  test("cut in a packet near its end: the walk hands over and the files hold the general decode's once", async () => {
    const bytes = readFileSync(w.timingTrace);
    // A TIP's first byte (IPBytes 1-6 in bits 7:5, type 0b01101) near the end: cut after it.
    let at = bytes.length - 64;
    while ((bytes[at]! & 0x1f) !== 0x0d || bytes[at]! >> 5 === 0) at--;
    const cwd = mkdtempSync(join(dir, "cut-"));
    writeFileSync(join(cwd, "t.pt"), bytes.subarray(0, at + 1));
    const { fast, events, bytes: written } = await compare(cwd, [...fuzzArgs, "--pt", "t.pt"]);
    assert.equal(fast?.status, -1, "the walk decoded a cut packet");
    // The whole run but its end: written by the walk before it handed over, then again.
    assert.ok(events > 1000, `${events} frames begun`);
    const whole = await flow(dir, [...fuzzArgs, "--pt", w.timingTrace], true);
    assert.ok(
      written < whole.files[0]!.length * 1.01,
      `${written} bytes against the whole trace's ${whole.files[0]!.length}`,
    );
  });

  test("into files that keep what was written (pipes): the general decode, which writes them once", async () => {
    const io = captureIo(dir);
    const files = pipeWriters(io);
    let fast: unknown;
    const timeline = join(out, "pipe.json");
    const code = await runFlow([...fuzzArgs, "--pt", w.timingTrace, "--timeline", timeline], io, {
      onFastCoverage: (r) => {
        fast = r;
      },
    });
    assert.equal(code, 0, io.err.join(""));
    assert.equal(fast, undefined, "the walk ran into a file it could not start again");
    const general = await flow(dir, [...fuzzArgs, "--pt", w.timingTrace], true);
    assert.equal(files.get(timeline), general.files[0]!.toString("utf8"));
  });

  test("corrupted and cut: the walk hands over or writes the general decode's files", async () => {
    const bytes = new Uint8Array(readFileSync(w.timingTrace)).subarray(0, 24_000);
    const cwd = mkdtempSync(join(dir, "mut-"));
    let agreed = 0;
    let handed = 0;
    await fc.assert(
      fc.asyncProperty(cutAndEdited(bytes), async (t) => {
        writeFileSync(join(cwd, "t.pt"), t);
        const { fast } = await compare(cwd, [...fuzzArgs, "--pt", "t.pt"]);
        if (fast?.status === 0) agreed++;
        else if (fast?.status === -1) handed++;
      }),
      { numRuns: 40, seed: 11 },
    );
    assert.ok(agreed > 3 && handed > 3, `${agreed} of 40 decoded by the walk, ${handed} handed over`);
  });
});

const CONFIGS: [string, CtlFields][] = [
  ["TSC, MTC and CYC", { ...BRANCHES, TSCEn: 1, MTCEn: 1, MTCFreq: 3, CYCEn: 1 }],
  ["TSC and MTC, no RET compression", { ...BRANCHES, TSCEn: 1, MTCEn: 1, MTCFreq: 0, DisRETC: 1 }],
  ["TSC, user only", { ...BRANCHES, TSCEn: 1, OS: 0 }],
];

describe("generated kernel-traced programs with timing packets: the same files either way", () => {
  for (const seed of [1, 2, 3, 4, 5, 6, 10, 11]) {
    // Seeds 10-11: a small internal buffer that overflows (OVF: the walk goes on through
    // it, in PSB+ and out, after an interrupt's FUP or a MODE.Exec too).
    const overflow = seed >= 10;
    const [name, ctl] = CONFIGS[seed % CONFIGS.length]!;
    test(`program ${seed}, ${name}${overflow ? ", overflowing" : ""}`, async () => {
      const { cwd, raw, overflows } = tracedProgram(dir, seed, ctl, overflow);
      if (overflow) assert.ok(overflows > 0, "no overflow");
      const { fast, events } = await compare(cwd, [...raw, "--pt", "trace.pt", "--quiet"]);
      assert.ok(fast !== undefined, "the walk did not run");
      assert.equal(fast.status, 0, fast.reason);
      assert.ok(events > 20, `${events} frames begun`);
    });
  }
});

describe("real captures, with and without their CPU's errata", () => {
  const captures: [string, string | undefined, string[], string][] = [
    [
      "HASE loopy 2018-04-04 (Skylake)",
      corpusPath("real", "hase"),
      ["--elf", "2018-04-04/loopy/loopy", "--pt", "reference/loopy-20180404-aux-idx2.bin"],
      "6/94/3",
    ],
    [
      "HASE control_flow 2018-04-04 (Skylake)",
      corpusPath("real", "hase"),
      [
        "--elf",
        "2018-04-04/control_flow/control_flow",
        "--pt",
        "reference/control_flow-20180404-aux-idx1.bin",
      ],
      "6/94/3",
    ],
    [
      "DynamoRIO drpt2trace tracedir-2aad718 (Skylake-SP: MTC and CYC, a TSC frequency)",
      corpusPath("real", "dynamorio-drpt2trace"),
      [
        // The clock of DR_FLOW_ARGS, without its --cpu.
        ...DR_FLOW_ARGS.filter((_, k, a) => a[k] !== "--cpu" && a[k - 1] !== "--cpu"),
        "--elf",
        "test_simple.tracedir-2aad718/hello",
        "--pt",
        "test_simple.tracedir-2aad718/pt.bin",
      ],
      "6/85/7",
    ],
  ];
  for (const [name, cwd, argv, cpu] of captures)
    for (const errata of [false, true])
      test(`${name}${errata ? `, --cpu ${cpu}` : ""}`, {
        skip: cwd === undefined ? "the shared corpus (real) is absent" : false,
      }, async () => {
        const { fast, events } = await compare(cwd!, [...(errata ? ["--cpu", cpu] : []), ...argv, "--quiet"]);
        assert.ok(fast !== undefined, "the walk did not run");
        assert.ok(events > 0, "no frame");
      });
});

/** The conformance checks' code, trace, CPU (errata) and clock. */
const ptxed = ptxedInputs(
  new Set([
    "--raw",
    "--pt",
    "--cpu",
    "--mtc-freq",
    "--nom-freq",
    "--cpuid-0x15.eax",
    "--cpuid-0x15.ebx",
    ...FILTER_OPTIONS,
  ]),
);

describe("libipt's conformance traces: the same files either way", {
  skip: ptxed.length === 0 ? "the shared corpus (ptt) is absent" : false,
}, () => {
  test(`the ptxed checks' ${ptxed.length} inputs`, async () => {
    const covered = await countInputs(
      ptxed,
      async (c) => (await compare(c.dir, [...c.argv, "--quiet"])).fast?.status === 0,
    );
    assert.ok(ptxed.length > 100 && covered > 10, `${covered} of ${ptxed.length} traces decoded by the walk`);
  });
});
