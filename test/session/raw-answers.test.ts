/**
 * rawAnswers: a raw Intel PT trace, its code and the decoder settings decoded once
 * into what the web app shows. Checked against `ptkit flow` with the same options
 * (the same output files, byte for byte) on DynamoRIO's drpt2trace capture (every
 * decoder setting: CPU, MTC and nominal frequency, CPUID 0x15) and HASE's
 * control_flow (a static program: functions by name), and on bad input; C++ names
 * demangled with the demangler given.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { Demangler } from "../../src/analysis/index.js";
import { runFlow } from "../../src/cli/flow/flow.js";
import { loadDemangler } from "../../src/node/demangle-loader.js";
import { concatBytes } from "../../src/perf/bytes.js";
import { bytesSource } from "../../src/perf/index.js";
import {
  ANSWER_FILES,
  type AnswerFile,
  FilesIo,
  type RawCodeFile,
  type RawDecoderSettings,
  rawAnswers,
} from "../../src/session/index.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, DR_FLOW_ARGS, DR_SETTINGS, skipUnlessCorpus } from "../corpus.js";

/** A FilesIo with the files `names` of `dir`. */
function filesOf(dir: string, names: readonly string[]): FilesIo {
  const io = new FilesIo();
  for (const n of names) io.add(n, bytesSource(readFileSync(join(dir, n))));
  return io;
}

/** What `ptkit flow argv` writes, run in `dir` (the files kept in memory): exit code, stderr and files. */
async function flowFiles(dir: string, argv: string[]) {
  const io = captureIo(dir);
  const written = new Map<string, Uint8Array>();
  io.writeFile = (path, bytes) => written.set(path, bytes.slice());
  io.openWrite = (path) => {
    const chunks: Uint8Array[] = [];
    return {
      write: (c) => chunks.push(typeof c === "string" ? new TextEncoder().encode(c) : c.slice()),
      close: () => written.set(path, concatBytes(chunks)),
    };
  };
  const code = await runFlow(argv, io);
  return { code, stderr: io.err.join(""), stdout: io.out.join(""), written };
}

/** ptkit flow's options for the outputs rawAnswers writes. */
const OUTPUT_ARGS = [
  "--quiet",
  "--stat:insn",
  "--timeline",
  ANSWER_FILES.timeline,
  "--folded",
  ANSWER_FILES.folded,
  "--coverage",
  ANSWER_FILES.coverage,
  "--afl-map",
  ANSWER_FILES.aflMap,
  "--latency",
  ANSWER_FILES.latency,
];
const DECODED: AnswerFile[] = ["timeline", "folded", "coverage", "aflMap", "latency"];

const text = (chunks: readonly Uint8Array[] | undefined) =>
  new TextDecoder().decode(concatBytes(chunks ?? []));

const DR = ["real", "dynamorio-drpt2trace", "test_simple.raw"];

describe("rawAnswers names C++ functions with the demangler given", { skip: skipUnlessCorpus(...DR) }, () => {
  const dir = corpusPath(...DR)!;
  /**
   * The DynamoRIO program with its `_start` renamed in its symbol table to `_Z2abv`
   * (C++'s mangled name of `ab()`, as long as `_start`), so its code has a C++ name.
   */
  function mangledIo(): FilesIo {
    const elf = readFileSync(join(dir, "hello"));
    const at = elf.indexOf("_start\0");
    assert.ok(at > 0);
    elf.set(new TextEncoder().encode("_Z2abv"), at);
    const io = filesOf(dir, ["pt.bin"]);
    io.add("hello", bytesSource(elf));
    return io;
  }

  test("with the demangler: ab(); without: the mangled name", async () => {
    const demangler = loadDemangler();
    assert.ok(demangler instanceof Demangler, String(demangler));
    const named = await rawAnswers(mangledIo(), "pt.bin", [{ name: "hello" }], {}, { demangler });
    assert.equal(named.status, 0, named.error);
    assert.deepEqual(
      named.functions.filter((f) => f.self > 0).map((f) => [f.name, f.self]),
      [["ab()", 8]],
    );
    assert.equal(text(named.files.folded), "pt.bin;ab() 8\n");
    const plain = await rawAnswers(mangledIo(), "pt.bin", [{ name: "hello" }]);
    assert.deepEqual(
      plain.functions.filter((f) => f.self > 0).map((f) => [f.name, f.self]),
      [["_Z2abv", 8]],
    );
  });
});
describe("rawAnswers on DynamoRIO's test_simple.raw", { skip: skipUnlessCorpus(...DR) }, () => {
  const dir = corpusPath(...DR)!;
  // The settings of DynamoRIO's drpt2trace test (its cmake excerpt in the corpus).
  const settings: RawDecoderSettings = DR_SETTINGS;
  const flowArgs = [...DR_FLOW_ARGS, "--elf", "hello", "--pt", "pt.bin", ...OUTPUT_ARGS];

  test("the output files are ptkit flow's with the same options, and the tables add up", async () => {
    const a = await rawAnswers(filesOf(dir, ["pt.bin", "hello"]), "pt.bin", [{ name: "hello" }], settings);
    assert.equal(a.status, 0, a.error);
    const cli = await flowFiles(dir, flowArgs);
    assert.equal(cli.code, 0, cli.stderr);
    assert.equal(cli.stdout, "insn: 8.\n");
    for (const key of DECODED)
      assert.deepEqual(concatBytes(a.files[key] ?? []), cli.written.get(ANSWER_FILES[key]), key);
    assert.equal(
      a.summary,
      "wrote timeline.json, folded.txt, coverage.json, afl-map.bin, latency.json: 8 instructions, 0 decode errors",
    );
    assert.deepEqual(a.warnings, []);
    // The nominal frequency reached the decoder: times are in ns.
    assert.match(text(a.files.latency), /"clock":"ns"/);
    const start = a.functions.find((f) => f.name === "_start");
    assert.deepEqual(start && { self: start.self, total: start.total }, { self: 8, total: 8 });
    assert.equal(
      a.functions.reduce((n, f) => n + f.self, 0),
      8,
    );
    assert.equal(
      a.coverage.reduce((n, c) => n + c.insns, 0),
      8,
    );
    assert.deepEqual(
      a.annotated.map((f) => [f.name, f.lines.reduce((n, l) => n + l.count, 0)]),
      [["_start", 8]],
    );
    assert.ok(a.annotated[0]!.lines.every((l) => l.text !== "(no code)"));
  });

  test("without the nominal frequency, times are TSC ticks (the settings are used)", async () => {
    const { nomFreq: _, ...rest } = settings;
    const a = await rawAnswers(filesOf(dir, ["pt.bin", "hello"]), "pt.bin", [{ name: "hello" }], rest);
    assert.equal(a.status, 0, a.error);
    assert.match(text(a.files.latency), /"clock":"tsc"/);
    // Said in no front end's words (no command-line option) unless the front end gives its own.
    const ticks = (w: readonly string[]) => w.filter((x) => x.includes("times are TSC ticks"));
    assert.deepEqual(ticks(a.warnings), [
      "warning: the timeline: times are TSC ticks, written as if nanoseconds: the TSC frequency is unknown.",
    ]);
    const hints = { nomFreq: "the Nominal frequency field", outputs: { timeline: "Timeline" } };
    const b = await rawAnswers(filesOf(dir, ["pt.bin", "hello"]), "pt.bin", [{ name: "hello" }], rest, {
      hints,
    });
    assert.deepEqual(ticks(b.warnings), [
      "warning: Timeline: times are TSC ticks, written as if nanoseconds: the TSC frequency is unknown; give it with the Nominal frequency field.",
    ]);
  });

  test("files are taken by name: names ending in :<number> hold no address or range", async () => {
    const io = new FilesIo();
    io.add("trace.pt:0x10", bytesSource(readFileSync(join(dir, "pt.bin"))));
    io.add("libhello.so:1", bytesSource(readFileSync(join(dir, "hello"))));
    const a = await rawAnswers(io, "trace.pt:0x10", [{ name: "libhello.so:1" }], settings);
    assert.equal(a.status, 0, a.error);
    assert.match(a.summary, /: 8 instructions, 0 decode errors$/);
    assert.ok(a.functions.some((f) => f.name === "_start" && f.self === 8));
    // Raw bytes too: the program's code segment (file offset 0x1000) where it was linked to run.
    const raw = new FilesIo();
    raw.add("trace.pt:0x10", bytesSource(readFileSync(join(dir, "pt.bin"))));
    raw.add("code.bin:1", bytesSource(readFileSync(join(dir, "hello")).subarray(0x1000, 0x1027)));
    const b = await rawAnswers(raw, "trace.pt:0x10", [{ name: "code.bin:1", base: "0x401000" }], settings);
    assert.equal(b.status, 0, b.error);
    assert.match(b.summary, /: 8 instructions, 0 decode errors$/);
  });

  test("a load address moves the ELF file's code: nothing decodes where the trace ran", async () => {
    const code: RawCodeFile[] = [{ name: "hello", base: "0x10000000" }];
    const a = await rawAnswers(filesOf(dir, ["pt.bin", "hello"]), "pt.bin", code, settings);
    assert.equal(a.status, 0, a.error);
    assert.equal(
      a.functions.reduce((n, f) => n + f.self, 0),
      0,
    );
    assert.ok(
      a.warnings.some((w) => /^decode \[[0-9a-f]+, [0-9a-f]+: error: /.test(w)),
      a.warnings.join("\n"),
    );
    assert.match(a.summary, /: 0 instructions, [1-9]\d* decode errors?$/);
  });
});

const HASE = ["real", "hase"];
describe("rawAnswers on HASE control_flow (a static program)", { skip: skipUnlessCorpus(...HASE) }, () => {
  const dir = corpusPath(...HASE)!;
  const program = "2018-04-04/control_flow/control_flow";
  const trace = "reference/control_flow-20180404-aux-idx1.bin";

  test("functions by name, as ptkit flow's folded stacks and coverage have them", async () => {
    const a = await rawAnswers(filesOf(dir, [trace, program]), trace, [{ name: program }], { cpu: "6/94/3" });
    assert.equal(a.status, 0, a.error);
    const cli = await flowFiles(dir, ["--cpu", "6/94/3", "--elf", program, "--pt", trace, ...OUTPUT_ARGS]);
    assert.equal(cli.code, 0, cli.stderr);
    for (const key of ["folded", "coverage", "aflMap"] as const)
      assert.deepEqual(concatBytes(a.files[key] ?? []), cli.written.get(ANSWER_FILES[key]), key);
    const insns = Number(/^insn: (\d+)\.$/m.exec(cli.stdout)?.[1]);
    assert.ok(insns > 1000, cli.stdout);
    assert.match(a.summary, new RegExp(`: ${insns} instructions, 0 decode errors$`));
    assert.equal(
      a.functions.reduce((n, f) => n + f.self, 0),
      insns,
    );
    assert.ok(a.functions.some((f) => f.name === "main" && f.self > 0));
    assert.ok(a.annotated.some((f) => f.name === "main"));
    assert.match(text(a.files.annotate), /^main: \d+ instructions run$/m);
  });
});

describe("rawAnswers on bad input: an error in words", { skip: skipUnlessCorpus(...DR) }, () => {
  const dir = corpusPath(...DR)!;
  const io = () => filesOf(dir, ["pt.bin", "hello"]);

  test("code that is not an ELF file needs a load address", async () => {
    const a = await rawAnswers(io(), "pt.bin", [{ name: "pt.bin" }]);
    assert.equal(a.status, 1);
    assert.match(a.error ?? "", /^pt\.bin is not an ELF file: give the address/);
    assert.deepEqual(a.functions, []);
  });

  test("bad settings and addresses are named", async () => {
    const cpu = await rawAnswers(io(), "pt.bin", [{ name: "hello" }], { cpu: "sandybridge" });
    assert.match(cpu.error ?? "", /^cpu: want family\/model\[\/stepping\]/);
    const mtc = await rawAnswers(io(), "pt.bin", [{ name: "hello" }], { mtcFreq: 256 });
    assert.match(mtc.error ?? "", /^mtcFreq: want a whole number from 0 to 255: 256\.$/);
    const base = await rawAnswers(io(), "pt.bin", [{ name: "hello", base: "here" }]);
    assert.match(base.error ?? "", /^hello: bad load address: here/);
    const missing = await rawAnswers(io(), "pt.bin", [{ name: "nope" }]);
    assert.equal(missing.error, "nope: no such file.");
  });

  test("a file that is not a trace, and a truncated trace", async () => {
    const elf = await rawAnswers(io(), "hello", [{ name: "hello" }]);
    assert.equal(elf.status, 1);
    assert.equal(elf.error, "hello is an ELF file (a program or library), not a trace");
    const hinted = await rawAnswers(
      io(),
      "hello",
      [{ name: "hello" }],
      {},
      {
        hints: { elfNotTrace: (path) => `give ${path} as code` },
      },
    );
    assert.equal(
      hinted.error,
      "hello is an ELF file (a program or library), not a trace: give hello as code",
    );
    const cut = new FilesIo();
    cut.add("pt.bin", bytesSource(readFileSync(join(dir, "pt.bin")).subarray(0, 1500)));
    cut.add("hello", bytesSource(readFileSync(join(dir, "hello"))));
    const a = await rawAnswers(cut, "pt.bin", [{ name: "hello" }]);
    // Decoded up to where it ends (the whole trace runs 8 instructions).
    assert.equal(a.status, 0, a.error);
    const n = Number(/: (\d+) instructions?, /.exec(a.summary)?.[1]);
    assert.ok(n > 0 && n < 8, a.summary);
    assert.equal(
      a.functions.reduce((k, f) => k + f.self, 0),
      n,
    );
  });
});
