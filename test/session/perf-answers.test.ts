/**
 * The session layer without a file system: FilesIo serves a front end's files and
 * keeps what the pipeline writes; perfAnswers decodes a perf.data once and reads its
 * outputs back into what the web app shows. Checked on the HASE control_flow capture
 * against the CLI's own outputs and against invariants the answers must keep.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import fc from "fast-check";
import { runPerf } from "../../src/cli/perf/perf.js";
import { concatBytes } from "../../src/perf/bytes.js";
import { bytesSource } from "../../src/perf/index.js";
import { coverageRows, FilesIo, functionRows, perfAnswers } from "../../src/session/index.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { EMPTY_HOME } from "../perf/home.js";

const DIR = ["real", "hase", "2018-04-04", "control_flow"];
const PERF = "control_flow-20180404T163033.perf";
const PROGRAM = "control_flow";

describe("FilesIo", () => {
  test("serves the files added, by absolute or relative path, and keeps what is written", () => {
    const io = new FilesIo();
    io.add("dir/a.bin", bytesSource(new Uint8Array([1, 2, 3, 4])));
    assert.equal(io.fileSize("/dir/a.bin"), 4);
    assert.deepEqual(io.readRange("dir/./a.bin", 1, 10), new Uint8Array([2, 3, 4]));
    assert.throws(() => io.fileSize("dir"), { code: "EISDIR" });
    assert.throws(() => io.fileSize("nope"), { code: "ENOENT" });
    const w = io.openWrite("out.txt");
    const chunk = new Uint8Array([65, 66]);
    w.write(chunk);
    chunk[0] = 67; // the writer may fill its buffer again: what was written stays
    w.write("C");
    w.close();
    assert.equal(new TextDecoder().decode(io.output("/out.txt")), "ABC");
    assert.equal(io.output("other"), undefined);
  });

  test("standard output and error are kept up to a bound", () => {
    const io = new FilesIo();
    io.stderr("x".repeat(1 << 20));
    io.stderr("more");
    assert.equal(io.stderrText.length, 1 << 20);
    assert.equal(io.dropped, 4);
  });
});

describe("perfAnswers on HASE control_flow", { skip: skipUnlessCorpus(...DIR) }, () => {
  const dir = corpusPath(...DIR)!;
  const files = (withProgram: boolean) => {
    const io = new FilesIo();
    io.add(PERF, bytesSource(readFileSync(join(dir, PERF))));
    if (withProgram) io.add(PROGRAM, bytesSource(readFileSync(join(dir, PROGRAM))));
    return io;
  };

  test("the outputs are the CLI's, and the tables add up", () => {
    const a = perfAnswers(files(true), PERF, [PROGRAM]);
    assert.equal(a.status, 0, a.error);
    assert.equal(
      a.summary,
      "wrote timeline.json, folded.txt, coverage.json, afl-map.bin, latency.json: 1092 instructions, 17 calls, 1 thread in 1 process",
    );
    assert.deepEqual(a.missing, []);
    // The CLI with the same options writes the same bytes.
    const io = captureIo(dir);
    const written = new Map<string, Uint8Array>();
    io.writeFile = (path, bytes) => written.set(path, bytes.slice());
    io.openWrite = (path) => {
      const chunks: Uint8Array[] = [];
      written.set(path, new Uint8Array());
      return {
        write: (c) => chunks.push(typeof c === "string" ? new TextEncoder().encode(c) : c.slice()),
        close: () => written.set(path, Buffer.concat(chunks)),
      };
    };
    const args = [
      "-q",
      "--elf",
      PROGRAM,
      "--timeline",
      "t.json",
      "--folded",
      "f.txt",
      "--coverage",
      "c.json",
      PERF,
    ];
    assert.equal(runPerf(args, io, EMPTY_HOME), 0, io.err.join(""));
    assert.deepEqual(
      new Uint8Array(written.get(join(dir, "f.txt")) ?? written.get("f.txt")!),
      concatBytes(a.files.folded!),
    );
    assert.deepEqual(
      new Uint8Array(written.get(join(dir, "t.json")) ?? written.get("t.json")!),
      concatBytes(a.files.timeline!),
    );
    // The tables come from the decode's structures: the same as from the files.
    const text = (chunks: readonly Uint8Array[] | undefined) =>
      new TextDecoder().decode(concatBytes(chunks!));
    assert.deepEqual(a.functions, functionRows(text(a.files.folded), text(a.files.latency)));
    assert.deepEqual(a.coverage, coverageRows(text(a.files.coverage)));
    assert.ok(a.coverage.some((c) => c.name === "main"));
    // Every instruction is some function's own; coverage counts the same instructions.
    assert.equal(
      a.functions.reduce((n, f) => n + f.self, 0),
      1092,
    );
    assert.equal(
      a.coverage.reduce((n, c) => n + c.insns, 0),
      1092,
    );
    assert.equal(a.functions.find((f) => f.name === "_start")!.total, 1092);
    // The annotation: each function's instruction runs add up to its coverage.
    assert.ok(a.annotated.length > 0);
    for (const f of a.annotated) {
      assert.equal(
        f.lines.reduce((n, l) => n + l.count, 0),
        f.insns,
        f.name,
      );
      assert.ok(
        f.lines.every((l) => l.text !== "(no code)"),
        f.name,
      );
    }
    const annotation = text(a.files.annotate);
    assert.match(annotation, /^main: 131 instructions run$/m);
    assert.match(annotation, /^ +1 +0x400180: {2}\S/m);
  });

  test("a binary is taken by its name: one named control_flow:1 holds no load address", () => {
    const io = new FilesIo();
    io.add(PERF, bytesSource(readFileSync(join(dir, PERF))));
    io.add(`${PROGRAM}:1`, bytesSource(readFileSync(join(dir, PROGRAM))));
    // No mmap names it: loaded for every process at its own addresses, where the program ran.
    const a = perfAnswers(io, PERF, [`${PROGRAM}:1`]);
    assert.equal(a.status, 0, a.error);
    assert.match(a.summary, /: 1092 instructions, /);
  });

  test("without the program: the binary is named, and nothing is decoded", () => {
    const a = perfAnswers(files(false), PERF, []);
    assert.equal(a.status, 0);
    assert.equal(a.missing.length, 1);
    assert.match(a.missing[0]!.path, /\/control_flow$/);
    // No instruction ran anywhere known (the interrupt before the entry point still shows).
    assert.ok(
      a.functions.every((f) => f.self === 0 && f.total === 0),
      JSON.stringify(a.functions),
    );
    assert.deepEqual(a.coverage, []);
    assert.deepEqual(a.annotated, []);
  });

  test("a truncated perf.data: an error in words, not an exception", () => {
    const io = new FilesIo();
    io.add(PERF, bytesSource(readFileSync(join(dir, PERF)).subarray(0, 100)));
    const a = perfAnswers(io, PERF, []);
    assert.notEqual(a.status, 0);
    assert.match(a.error ?? "", /^control_flow-20180404T163033\.perf: .*offset/);
  });
});

const QUIPPER = ["real", "quipper-perf-data", "perf.data.intel_pt-4.14"];
test("perfAnswers names a missing kernel without ptkit perf's options", {
  skip: skipUnlessCorpus(...QUIPPER),
}, () => {
  const io = new FilesIo();
  io.add("perf.data", bytesSource(readFileSync(corpusPath(...QUIPPER)!)));
  const a = perfAnswers(io, "perf.data", []);
  assert.equal(a.status, 0, a.error);
  assert.deepEqual(
    a.missing.filter((m) => m.path.startsWith("[")),
    // Each place a decode stopped at kernel code: after each, it takes up again at the
    // next address a packet gives whole, as perf's decoder does (5 at the next PSB; 464
    // before an interrupt whose source came whole took up there, as perf's does, and
    // before the entry trampolines, which no kernel mmap of the file covers, were
    // errors each time, as perf's "no map", instead of the kernel's).
    [{ path: "[kernel]", addresses: 172 }],
  );
});

describe("the tables from the outputs", () => {
  test("functionRows: self is the innermost frame's, total counts each path once per function", () => {
    const rows = functionRows(
      "t;a;b 5\nt;a;b;a 2\nt;c 1\n",
      JSON.stringify({ functions: [{ name: "b", calls: 3, total: 900 }] }),
    );
    assert.deepEqual(rows, [
      { name: "b", self: 5, total: 7, calls: 3, ns: 900 },
      { name: "a", self: 2, total: 7, calls: 0, ns: 0 },
      { name: "c", self: 1, total: 1, calls: 0, ns: 0 },
    ]);
  });

  test("functionRows: lines that repeat the line before's frames, or part of a frame's name, or none", () => {
    // Depth first, as folded stacks come: each line's frames taken from the one before where they match.
    const rows = functionRows(
      "t;a;b 5\nt;a;b;c 2\nt;a;bb 3\nt;a;b;a 4\nt;a;b;a;b 1\nu;a;b 6\nt;a 7\nt;a;b;c 2\nt; 1\nt 9\nt;x y;z 1\nt;q zz\n",
      "",
    );
    const by = new Map(rows.map((r) => [r.name, [r.self, r.total]]));
    // a: 7 itself, under it everything but the line of the empty frame and the line without frames.
    assert.deepEqual(by.get("a"), [4 + 7, 5 + 2 + 3 + 4 + 1 + 6 + 7 + 2]);
    // b: not counted twice on t;a;b;a;b, and bb is another function.
    assert.deepEqual(by.get("b"), [5 + 1 + 6, 5 + 2 + 4 + 1 + 6 + 2]);
    assert.deepEqual(by.get("bb"), [3, 3]);
    assert.deepEqual(by.get("c"), [2 + 2, 2 + 2]);
    assert.deepEqual(by.get(""), [1, 1]);
    // A name with a space in it (demangled C++); a weight that is no number drops its line.
    assert.deepEqual(by.get("x y"), [0, 1]);
    assert.deepEqual(by.get("z"), [1, 1]);
    assert.equal(by.get("q"), undefined);
    assert.equal(by.get("t"), undefined);
  });

  test("functionRows takes each line's frames as a split of the line would, in any order of lines", () => {
    const frame = fc.constantFrom("a", "b", "c", "ab", "b c", "");
    const line = fc.tuple(fc.constantFrom("t", "u"), fc.array(frame, { maxLength: 6 }), fc.nat(20));
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), (lines) => {
        const text = lines.map(([t, frames, w]) => `${[t, ...frames].join(";")} ${w}`).join("\n");
        // What each line says, split apart: self for the innermost frame, total once a path.
        const want = new Map<string, [number, number]>();
        const add = (name: string, s: number, t: number) => {
          const v = want.get(name) ?? [0, 0];
          want.set(name, [v[0] + s, v[1] + t]);
        };
        for (const [, frames, w] of lines) {
          if (frames.length === 0) continue;
          add(frames.at(-1)!, w, 0);
          for (const name of new Set(frames)) add(name, 0, w);
        }
        const got = new Map(functionRows(text, "").map((r) => [r.name, [r.self, r.total]]));
        assert.deepEqual(got, want);
      }),
      { numRuns: 500 },
    );
  });

  test("coverageRows groups blocks by function", () => {
    const json = JSON.stringify({
      blocks: [
        { start: "0x10", insns: 3, count: 2, symbol: "f" },
        { start: "0x20", insns: 1, count: 5, symbol: "f+0x10" },
        { start: "0x30", insns: 4, count: 1 },
      ],
    });
    assert.deepEqual(coverageRows(json), [
      {
        name: "f",
        blocks: 2,
        entries: 7,
        insns: 11,
        list: [
          { start: "0x10", insns: 3, count: 2, symbol: "f" },
          { start: "0x20", insns: 1, count: 5, symbol: "f+0x10" },
        ],
      },
      { name: "[unknown]", blocks: 1, entries: 1, insns: 4, list: [{ start: "0x30", insns: 4, count: 1 }] },
    ]);
  });
});
