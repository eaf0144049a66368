/**
 * Raw traces are read a window at a time (TraceBytes): `ptkit stats`, `dump` and
 * `flow --pt` print byte for byte what they print over the whole file, with windows
 * as small as one byte, on every libipt conformance check, on the real captures (flow
 * with both decoders and the analysis outputs) and on a long synthetic trace with
 * stretches of garbage, read into fresh buffers or into reused ones (the process's
 * readRangeInto); and the reads stay as small as the window however long the file is.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, describe, test } from "node:test";
import { runDump } from "../../src/cli/dump/dump.js";
import { runFlow } from "../../src/cli/flow/flow.js";
import { runStats } from "../../src/cli/stats/stats.js";
import { nodeIo } from "../../src/node/io.js";
import type { TraceInternals } from "../../src/session/file-range.js";
import type { SessionIo } from "../../src/session/io.js";
import { captureIo, loadPttChecks } from "../conformance/ptt.js";
import { CORPUS_DIR, corpusPath, skipUnlessCorpus } from "../corpus.js";

type Command = (
  argv: readonly string[],
  io: SessionIo,
  internal?: TraceInternals,
) => number | Promise<number>;
const COMMANDS: Record<string, Command> = { ptdump: runDump, ptxed: runFlow, dump: runDump, flow: runFlow };

interface Run {
  out: string;
  err: string;
  code: number;
  /** The largest read of a file. */
  largest: number;
}

/**
 * Run a command in `cwd` reading raw traces `windowSize` bytes at a time (undefined:
 * the default), into fresh buffers (`readRange`) or, `into`, into the reader's own
 * (the process's `readRangeInto`: TraceBytes reuses its buffers).
 */
async function run(
  cmd: string,
  cwd: string,
  argv: readonly string[],
  windowSize?: number,
  into = false,
): Promise<Run> {
  const io = captureIo(cwd);
  const files = new Map<string, Uint8Array>();
  let largest = 0;
  io.readRange = (p, offset, length) => {
    largest = Math.max(largest, length);
    const path = resolve(cwd, p);
    let bytes = files.get(path);
    if (!bytes) {
      bytes = new Uint8Array(readFileSync(path));
      files.set(path, bytes);
    }
    return bytes.slice(offset, offset + length);
  };
  const readInto = nodeIo(cwd).readRangeInto;
  if (into && readInto)
    io.readRangeInto = (p, offset, buf, at, length) => {
      largest = Math.max(largest, length);
      return readInto(p, offset, buf, at, length);
    };
  const code = await (COMMANDS[cmd] ?? runStats)(argv, io, { windowSize });
  return { out: io.out.join(""), err: io.err.join(""), code, largest };
}

/** stats' output without its timing (the only part that may differ from run to run). */
async function statsRun(
  cwd: string,
  argv: readonly string[],
  windowSize?: number,
  into = false,
): Promise<Run> {
  const r = await run("stats", cwd, argv, windowSize, into);
  return { ...r, out: r.out.replace(/decoded in .*|"seconds":[^,]*,"mbPerSecond":[^}]*/g, "") };
}

/** Whether `cmd argv` prints the same with each window size, read either way, as over the whole file. */
async function assertSame(
  cmd: string,
  cwd: string,
  argv: readonly string[],
  windows: readonly number[],
): Promise<void> {
  const go =
    cmd === "stats"
      ? statsRun
      : (c: string, a: readonly string[], w?: number, into?: boolean) => run(cmd, c, a, w, into);
  const whole = await go(cwd, argv, Number.POSITIVE_INFINITY);
  for (const w of windows) {
    for (const into of [false, true]) {
      const part = await go(cwd, argv, w, into);
      const what = `${cmd} ${argv.join(" ")} (window ${w}${into ? ", read into reused buffers" : ""})`;
      assert.equal(part.code, whole.code, what);
      assert.equal(part.err, whole.err, what);
      assert.equal(part.out, whole.out, what);
    }
  }
}

const WINDOWS = [1, 16, 64, 100, 1000];

describe("raw traces read a window at a time", () => {
  test("every conformance check prints the same with windows of 1 to 1000 bytes", {
    skip: skipUnlessCorpus("ptt"),
  }, async () => {
    const checks = loadPttChecks();
    assert.ok(checks.length > 400);
    const traces = new Set<string>();
    for (const [i, c] of checks.entries()) {
      // Each check with a one-byte window and one other size in turn; each trace's stats with all.
      await assertSame(c.tool, c.dir, c.argv, [1, WINDOWS[1 + (i % 4)]!]);
      const pt = c.argv.find((a) => a.endsWith(".pt"));
      if (pt && !traces.has(join(c.dir, pt))) {
        traces.add(join(c.dir, pt));
        await assertSame("stats", c.dir, ["--json", pt], WINDOWS);
      }
    }
    assert.ok(traces.size > 100);
  });

  const REAL = [
    "real/hase/reference/control_flow-20180404-aux-idx1.bin",
    "real/hase/reference/loopy-20180514-aux-idx1.bin",
    "real/quipper-perf-data/extracted/intel_pt-4.14-aux-idx3.bin",
    "real/quipper-perf-data/extracted/piped.intel_pt-4.14-aux-idx0.bin",
    "real/keeper-intelpt-summary/traced_data.bin",
    "real/dynamorio-drpt2trace/test_simple.tracedir-2aad718/pt.bin",
  ];

  test("real captures: stats and dump (options, --no-sync, ranges) print the same", {
    skip: skipUnlessCorpus("real"),
  }, async () => {
    for (const file of REAL) {
      const path = corpusPath(file);
      if (!path) continue;
      await assertSame("stats", CORPUS_DIR, [path], [1, 100, 1000]);
      await assertSame("dump", CORPUS_DIR, [path], [1, 64, 1000]);
      await assertSame("dump", CORPUS_DIR, ["--lastip", "--time", "--tcal", "--raw", path], [16, 100]);
      await assertSame("dump", CORPUS_DIR, ["--no-sync", `${path}:0x7-0x800`], [1, 100]);
      await assertSame("stats", CORPUS_DIR, [`${path}:0x11`], [16, 1000]);
    }
  });

  test("real captures: flow with both decoders and the analysis outputs prints the same", {
    skip: skipUnlessCorpus("real", "dynamorio-drpt2trace"),
  }, async () => {
    const dr = corpusPath("real", "dynamorio-drpt2trace")!;
    const hase = corpusPath("real", "hase")!;
    const haseElf = "2018-05/loopy-20180514T145114/binaries/home/joerg/git/hase/tests/bin/loopy/loopy";
    const cases: Array<[string, string[]]> = [
      [
        dr,
        [
          "--cpu",
          "6/85/7",
          "--elf",
          "test_simple.tracedir-2aad718/hello",
          "--pt",
          "test_simple.tracedir-2aad718/pt.bin",
        ],
      ],
      [
        dr,
        [
          ...["--cpu", "6/85/4", "--mtc-freq", "3", "--nom-freq", "37", "--cpuid-0x15.eax", "2"],
          ...[
            "--cpuid-0x15.ebx",
            "308",
            "--time",
            "--elf",
            "test_simple.raw/hello",
            "--pt",
            "test_simple.raw/pt.bin",
          ],
        ],
      ],
      [hase, ["--cpu", "6/61/4", "--elf", haseElf, "--pt", "reference/loopy-20180514-aux-idx1.bin"]],
    ];
    for (const [cwd, argv] of cases) {
      for (const decoder of ["--insn-decoder", "--block-decoder"])
        await assertSame("flow", cwd, [decoder, "--offset", ...argv], [16, 1000]);
    }
    // The analysis outputs are files: the same bytes too.
    const outputs = async (w: number, into = false) => {
      const d = mkdtempSync(join(tmpdir(), "ptkit-stream-"));
      try {
        const r = await run(
          "flow",
          dr,
          [...["--folded", join(d, "f"), "--jsonl", join(d, "j")], ...cases[0]![1]],
          w,
          into,
        );
        assert.equal(r.code, 0, r.err);
        return [r.out, readFileSync(join(d, "f"), "utf8"), readFileSync(join(d, "j"), "utf8")];
      } finally {
        rmSync(d, { recursive: true, force: true });
      }
    };
    const whole = await outputs(Number.POSITIVE_INFINITY);
    assert.ok(whole[2]!.length > 1000);
    assert.deepEqual(await outputs(100), whole);
    assert.deepEqual(await outputs(100, true), whole);
  });

  describe("a long trace with stretches of garbage", {
    skip: skipUnlessCorpus("real", "dynamorio-drpt2trace"),
  }, () => {
    const dr = corpusPath("real", "dynamorio-drpt2trace");
    const dir = mkdtempSync(join(tmpdir(), "ptkit-stream-"));
    after(() => rmSync(dir, { recursive: true, force: true }));
    // Copies of a real trace; garbage inside some copies, between others, and a run of zeros (PAD).
    const one = dr ? readFileSync(join(dr, "test_simple.tracedir-2aad718/pt.bin")) : Buffer.alloc(0);
    const parts: Uint8Array[] = [];
    for (let i = 0; i < 5; i++) {
      const copy = Uint8Array.from(one);
      if (i % 2 === 1) for (let j = 0; j < 300; j++) copy[5000 + i * 1000 + j] = (j * 131 + i * 7) & 0xff;
      parts.push(copy);
      parts.push(Uint8Array.from({ length: 777 + i * 1000 }, (_, j) => (i === 2 ? 0 : (j * 97 + 13) & 0xff)));
    }
    const trace = Buffer.concat(parts);
    writeFileSync(join(dir, "long.pt"), trace);
    const elf = dr ? join(dr, "test_simple.tracedir-2aad718/hello") : "";

    test("stats, dump and flow print the same", async () => {
      await assertSame("stats", dir, ["long.pt"], [1, 100, 4096]);
      await assertSame("dump", dir, ["--lastip", "--time", "long.pt"], [1, 100, 4096]);
      await assertSame("dump", dir, ["--no-sync", "long.pt:0x3-0x9000"], [100]);
      await assertSame("flow", dir, ["--cpu", "6/85/7", "--elf", elf, "--pt", "long.pt"], [100, 4096]);
      await assertSame(
        "flow",
        dir,
        ["--block-decoder", "--cpu", "6/85/7", "--elf", elf, "--pt", "long.pt"],
        [1000],
      );
      const stats = (await statsRun(dir, ["long.pt"], 100)).out;
      assert.match(stats, /errors {7}[1-9]/);
    });

    test("the reads are the window's size, not the file's, past long stretches without PSB too", async () => {
      // Ten times the trace for the packet commands; for flow the trace, 1 MiB of PAD and the trace again.
      writeFileSync(join(dir, "longer.pt"), Buffer.concat(new Array(10).fill(trace)));
      writeFileSync(join(dir, "padded.pt"), Buffer.concat([one, Buffer.alloc(1 << 20), one]));
      const flow = ["--cpu", "6/85/7", "--elf", elf, "--pt", "padded.pt"];
      await assertSame("flow", dir, flow, [4096]);
      for (const [cmd, argv] of [
        ["stats", ["longer.pt"]],
        ["dump", ["longer.pt"]],
        ["flow", flow],
      ] as const) {
        for (const into of [false, true]) {
          const r = await run(cmd, dir, argv, 8192, into);
          assert.equal(r.code, 0, r.err);
          assert.ok(r.largest <= 8192, `${cmd}: largest read ${r.largest}`);
        }
      }
    });
  });

  test("files that are no trace: one line naming the file and what to do, exit 1", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ptkit-stream-"));
    try {
      writeFileSync(join(dir, "notes.txt"), "just some text\nand more\n");
      writeFileSync(join(dir, "r4.pt"), Uint8Array.from([0x72, 0x56, 0x36, 0x87]));
      writeFileSync(join(dir, "r1.pt"), Uint8Array.from([0x72]));
      writeFileSync(
        join(dir, "junk.bin"),
        Uint8Array.from({ length: 5000 }, (_, i) => (i * 89 + 7) & 0xff),
      );
      writeFileSync(
        join(dir, "prog"),
        Uint8Array.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, ...new Array(56).fill(0)]),
      );
      writeFileSync(
        join(dir, "perf.data"),
        Uint8Array.from([...Buffer.from("PERFILE2"), ...new Array(100).fill(0)]),
      );
      const cases: Array<[string, string[], RegExp]> = [
        ["dump", ["notes.txt"], /notes\.txt is text, not a binary Intel PT trace/],
        ["dump", ["junk.bin"], /junk\.bin: no PSB packet .* at offset 0x0: .*--no-sync/],
        ["flow", ["--pt", "notes.txt"], /notes\.txt is text/],
        ["flow", ["--pt", "junk.bin"], /junk\.bin: no PSB packet /],
        // Only the bytes of the range tell what it is (regression, the fuzzer's
        // past-end check: the first byte of a binary file, "r", was a piece of a trace,
        // the same byte alone in a file text).
        ["flow", ["--pt", "r4.pt:0x0-0x1"], /r4\.pt is text/],
        ["flow", ["--pt", "r1.pt:0x0-0x1"], /r1\.pt is text/],
        ["dump", ["r4.pt:0x0-0x1"], /r4\.pt is text/],
        ["flow", ["--pt", "r4.pt:0x1-0x4"], /r4\.pt: no PSB packet .* at offset 0x1: /],
        ["dump", ["prog:0x10-0x20"], /prog: no PSB packet .* at offset 0x10: /],
        ["flow", ["--pt", "prog"], /prog is an ELF file.*--elf prog --pt/],
        [
          "flow",
          ["--pt", "perf.data"],
          /perf\.data looks like a perf\.data file: use 'ptkit perf perf\.data'/,
        ],
      ];
      for (const [cmd, argv, message] of cases) {
        const r = await run(cmd, dir, argv);
        const what = `${cmd} ${argv.join(" ")}`;
        assert.equal(r.code, 1, what);
        assert.match(r.err, new RegExp(`^ptkit ${cmd}: [^\\n]*${message.source}[^\\n]*\\n$`), what);
        assert.doesNotMatch(r.out, /error/, what);
      }
      // A trace that ends in its first PSB+ is a trace.
      writeFileSync(
        join(dir, "header.pt"),
        Uint8Array.from([...new Array(8).fill([2, 0x82]).flat(), 2, 0x23]),
      );
      for (const cmd of ["dump", "flow"]) {
        const r = await run(cmd, dir, cmd === "flow" ? ["--pt", "header.pt"] : ["header.pt"]);
        assert.equal(r.code, 0, `${cmd}: ${r.err}`);
      }
      // A piece of trace without PSB is still dumped from its first byte with --no-sync.
      const noSync = await run("dump", dir, ["--no-sync", "junk.bin"]);
      assert.equal(noSync.code, 0, noSync.err);
      assert.ok(noSync.out.length > 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
