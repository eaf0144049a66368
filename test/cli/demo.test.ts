/**
 * `ptkit demo` (npm start) on the bundled sample: its numbers against the execution
 * the trace was made of (recorded in sample.json) and against the block decoder;
 * errors, help and progress; and that tools/sample regenerates the same files.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { BUNDLED_SAMPLE } from "../../src/cli/demo/sample.js";
import { main } from "../../src/cli/ptkit.js";
import { type DecoderConfig, defaultDecoderConfig } from "../../src/event/index.js";
import { Block, BlockDecoder, drive } from "../../src/flow/index.js";
import { Image, parseElf } from "../../src/image/index.js";
import { valgrindVersion } from "../../src/node/valgrind.js";
import { gccVersion, generateSample } from "../../tools/sample/regenerate.js";
import { timelineFrames } from "../analysis/timeline-frames.js";
import { captureIo } from "../conformance/ptt.js";

const description = JSON.parse(readFileSync(join(BUNDLED_SAMPLE, "sample.json"), "utf8"));
const elfBytes = new Uint8Array(readFileSync(join(BUNDLED_SAMPLE, description.program)));
const traceBytes = new Uint8Array(readFileSync(join(BUNDLED_SAMPLE, description.trace)));
const config: DecoderConfig = { ...defaultDecoderConfig(), ...description.decode };

async function ptkit(tty: boolean, ...argv: string[]) {
  const io = { ...captureIo(mkdtempSync(join(tmpdir(), "ptkit-demo-"))), stderrIsTty: tty };
  const code = await main(argv, io);
  return { code, out: io.out.join(""), err: io.err.join(""), cwd: io.cwd };
}

/** Instructions by the block decoder: the sum of its blocks' counts. */
function blockDecoderInsns(): number {
  const image = new Image();
  image.addElf(parseElf(elfBytes), { zeroFill: false });
  let insns = 0;
  drive(new BlockDecoder(traceBytes, { image, config }), new Block(), {
    record: (block) => {
      insns += block.ninsn;
    },
  });
  return insns;
}

describe("ptkit demo", async () => {
  const json = await ptkit(false, "demo", "--json", "--no-timeline");
  const result = JSON.parse(json.out);

  test("the sample is small and self-contained", () => {
    const total = ["sample.c", description.program, description.trace, "sample.json", "README.md"]
      .map((f) => readFileSync(join(BUNDLED_SAMPLE, f)).length)
      .reduce((a, b) => a + b);
    assert.ok(total < 100_000, `${total} bytes`);
    assert.equal(parseElf(elfBytes).segments.filter((s) => s.type === 3).length, 0, "no PT_INTERP");
  });

  test("decodes exactly what the execution ran: functions, calls, branches, depth", () => {
    assert.equal(json.code, 0, json.err);
    assert.equal(json.err, "");
    assert.deepEqual(result.errors, []);
    assert.deepEqual(result.profile, description.execution.userMode);
    assert.ok(result.profile.instructions > 100_000);
    assert.equal(result.profile.functions[0].name, "fib");
    assert.ok(result.profile.maxDepth >= 18, "fib(17) nests at least 17 calls below main");
  });

  test("the instruction count equals the block decoder's", () => {
    assert.equal(result.profile.instructions, blockDecoderInsns());
  });

  test("the time span follows from the trace unit's clocks", () => {
    const unit = description.traceUnit;
    // TSC ticks per instruction: cycles per instruction × nominal / core:bus ratio.
    const expected = (result.profile.instructions * unit.cyclesPerInsn * unit.nominalRatio) / unit.cbr;
    assert.ok(
      Math.abs(result.time.ticks - expected) < expected * 0.01,
      `${result.time.ticks} vs ${expected}`,
    );
    assert.equal(BigInt(result.time.firstTsc) >= BigInt(unit.tsc), true);
    assert.equal(result.packets > 10_000 && result.psbs > 1, true);
  });

  test("the text summary names the hot functions with their counts", async () => {
    const r = await ptkit(false, "demo", "--no-timeline", "--top", "3");
    assert.equal(r.code, 0, r.err);
    const p = description.execution.userMode;
    assert.match(r.out, new RegExp(`decoded +${p.instructions.toLocaleString("en-US")} instructions`));
    assert.match(r.out, new RegExp(`call depth +${p.maxDepth} \\(deepest in ${p.deepest}\\)`));
    assert.match(r.out, /time span +\d+\.\d µs/);
    assert.match(r.out, /decode +\d+\.\d ms: \d+\.\d\d M instructions\/s/);
    const rows = r.out.split("\n").filter((l) => /^ {2}\w+ +[\d,]+ +\d+\.\d +[\d,]+$/.test(l));
    assert.deepEqual(
      rows.map((l) => l.trim().split(/ +/)),
      p.functions
        .slice(0, 3)
        .map((f: { name: string; insns: number; calls: number }) => [
          f.name,
          f.insns.toLocaleString("en-US"),
          ((100 * f.insns) / p.instructions).toFixed(1),
          f.calls.toLocaleString("en-US"),
        ]),
    );
  });

  test("writes a timeline with one slice per call, and says how to open it", async () => {
    const r = await ptkit(false, "demo", "-o", "t.json");
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^timeline: t\.json; open https:\/\/ui\.perfetto\.dev and drag t\.json in\.$/m);
    const doc = JSON.parse(readFileSync(join(r.cwd, "t.json"), "utf8"));
    const slices = timelineFrames(doc.traceEvents);
    const perName = new Map<string, number>();
    for (const e of slices) perName.set(e.name, (perName.get(e.name) ?? 0) + 1);
    const called = description.execution.userMode.functions.filter((f: { calls: number }) => f.calls > 0);
    // Besides the calls: the function the trace starts in, and markers such as [syscall].
    const expected = [
      ...called.map((f: { name: string; calls: number }) => [f.name, f.calls]),
      ["_start", 1],
    ];
    assert.deepEqual(
      Object.fromEntries([...perName].filter(([name]) => !name.startsWith("[")).sort()),
      Object.fromEntries(expected.sort()),
    );
    assert.equal(perName.get("[syscall]"), description.execution.userMode.far);
    // Times in ns from the first TSC: inside the run's span.
    const spanNs = (result.time.ticks * 10) / description.decode.nomFreq;
    for (const e of slices)
      assert.ok(e.ts >= 0 && e.dur >= 0 && (e.ts + e.dur) * 1000 <= spanNs * 1.01, e.name);
  });

  test("a timeline that cannot be written: the summary still, and what to do", async () => {
    const r = await ptkit(false, "demo", "-o", "no/such/dir/t.json");
    assert.equal(r.code, 0);
    assert.match(
      r.err,
      /^ptkit demo: cannot write no\/such\/dir\/t\.json: .* -o <file> writes it elsewhere\.\n$/,
    );
    assert.match(r.out, /^hottest functions/m);
    assert.doesNotMatch(r.out, /^timeline:/m);
  });

  test("progress shows on a terminal only", async () => {
    const tty = await ptkit(true, "demo", "--no-timeline");
    assert.match(tty.err, /\rdecoding \[#* *\] \d+%/);
    assert.ok(tty.err.endsWith("\r\x1b[K"), "the bar is cleared");
    assert.equal((await ptkit(false, "demo", "--no-timeline")).err, "");
  });

  test("a missing sample says where it looked and what to do", async () => {
    const r = await ptkit(false, "demo", "--sample", "nowhere");
    assert.equal(r.code, 1);
    assert.match(r.err, new RegExp(`no sample at ${join(r.cwd, "nowhere")}`));
    assert.match(r.err, /give --sample <dir>/);
  });

  test("bad arguments give the usage; --help has examples", async () => {
    const bad = await ptkit(false, "demo", "extra");
    assert.equal(bad.code, 1);
    assert.match(bad.err, /unexpected argument 'extra'.\nusage: ptkit demo/);
    assert.match((await ptkit(false, "demo", "--top", "x")).err, /--top: 'x' is not a count/);
    const help = await ptkit(false, "demo", "--help");
    assert.equal(help.code, 0);
    assert.match(help.out, /^examples:\n {2}ptkit demo\n/m);
  });
});

describe("tools/sample", () => {
  const gcc = gccVersion();
  const why =
    gcc === undefined || valgrindVersion() === undefined
      ? "gcc or valgrind is not installed (apt-get install gcc valgrind)"
      : gcc !== description.compiler
        ? `the sample was compiled by '${description.compiler}', this is '${gcc}'`
        : false;

  test("regenerates the committed sample byte for byte", { skip: why }, async () => {
    const files = await generateSample(join(BUNDLED_SAMPLE, "sample.c"));
    for (const [name, bytes] of Object.entries(files))
      assert.ok(Buffer.from(bytes).equals(readFileSync(join(BUNDLED_SAMPLE, name))), `${name} differs`);
  });
});
