/**
 * Decision graphs kept between runs (session/graph-cache.ts through a GraphStore):
 * a later run over the same code takes the graph an earlier run kept and prints
 * byte for byte what a run without it prints, for the instruction count, the AFL map
 * and ptkit perf's call-stack outputs (a graph per process image); a graph of other
 * code is not taken; a corrupt one is a miss, replaced.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { loadFuzzWorkload } from "../../bench/fuzz-workload.js";
import { largeFlowArgs } from "../../bench/large-workload.js";
import type { FastCoverage } from "../../src/analysis/index.js";
import { runFlow } from "../../src/cli/flow/flow.js";
import { runPerf } from "../../src/cli/perf/perf.js";
import { NODE_WORDS, Node, NodeKind } from "../../src/flow/index.js";
import { Image } from "../../src/image/index.js";
import { FileGraphStore } from "../../src/node/graph-store.js";
import { GraphCache } from "../../src/session/graph-cache.js";
import type { GraphStore } from "../../src/session/io.js";
import { generate } from "../../src/unit/gen/index.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { EMPTY_HOME } from "../perf/home.js";
import { BRANCHES, msrs } from "../unit/gen/helpers.js";
import { randomProgram, randomRun, writeProgramFiles } from "../unit/gen/random-program.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-graph-cache-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A store in its own directory that counts what it was asked. */
class CountingStore implements GraphStore {
  readonly files: FileGraphStore;
  hits = 0;
  misses = 0;
  saves = 0;

  constructor(name: string) {
    this.files = new FileGraphStore(mkdtempSync(join(dir, `${name}-`)));
  }

  key(image: Image): string | undefined {
    return this.files.key(image);
  }

  load(key: string): Uint8Array | undefined {
    const bytes = this.files.load(key);
    if (bytes === undefined) this.misses++;
    else this.hits++;
    return bytes;
  }

  save(key: string, bytes: Uint8Array): void {
    this.saves++;
    this.files.save(key, bytes);
  }

  graphFiles(): string[] {
    return readdirSync(this.files.dir).filter((n) => n.endsWith(".graph"));
  }

  reset(): void {
    this.hits = 0;
    this.misses = 0;
    this.saves = 0;
  }
}

interface Run {
  code: number;
  out: string;
  err: string;
  fast: { status: number; reason: string } | undefined;
}

async function flow(cwd: string, argv: string[], store?: GraphStore): Promise<Run> {
  const io = captureIo(cwd);
  if (store) io.graphs = store;
  let fast: Run["fast"];
  const code = await runFlow(["--jobs", "1", ...argv], io, { onFastCoverage: (r) => (fast = r) });
  return { code, out: io.out.join(""), err: io.err.join(""), fast };
}

/** Runs of `argv` without a store, then twice with `store`: all print the same; the outcomes of the two with it. */
async function sameFlow(cwd: string, argv: string[], store: CountingStore, files: string[] = []) {
  const read = () => files.map((f) => readFileSync(join(cwd, f)));
  const plain = await flow(cwd, argv);
  const plainFiles = read();
  const runs: Run[] = [];
  for (const _ of [1, 2]) {
    const r = await flow(cwd, argv, store);
    assert.deepEqual(
      { code: r.code, out: r.out, err: r.err },
      { code: plain.code, out: plain.out, err: plain.err },
      argv.join(" "),
    );
    for (const [i, bytes] of read().entries()) assert.ok(bytes.equals(plainFiles[i]!), `${files[i]} differs`);
    runs.push(r);
  }
  return runs;
}

function smallFuzz() {
  return loadFuzzWorkload({ cacheDir: dir, codeBytes: 16384, traceBytes: 80_000, caseInsns: 20_000 });
}

describe("ptkit flow: a later run takes the graph an earlier one kept", () => {
  test("the fuzzing workload's count and AFL map, with and without timing: the same bytes", async () => {
    const w = smallFuzz();
    for (const trace of [w.trace, w.timingTrace]) {
      const store = new CountingStore("fuzz");
      const argv = ["--quiet", "--stat:insn", ...largeFlowArgs(w), "--pt", trace];
      const runs = await sameFlow(dir, argv, store);
      assert.equal(runs[1]!.out, `insn: ${w.insns}.\n`);
      // The first run missed and kept its graph; the second took it and made no node to keep.
      assert.deepEqual(
        { hits: store.hits, misses: store.misses, saves: store.saves },
        { hits: 1, misses: 1, saves: 1 },
      );
      assert.equal(store.graphFiles().length, 1);
      store.reset();
      await sameFlow(dir, [...argv, "--afl-map", "afl.bin"], store, ["afl.bin"]);
      assert.equal(store.hits, 2);
      assert.equal(store.saves, 0);
    }
  });

  test("kernel-traced programs: the count the same; a changed byte of code is another graph", async () => {
    for (const seed of [1, 2]) {
      const program = randomProgram(seed, 60);
      const exec = randomRun(program, seed, { insns: 20_000, interrupts: 0.01, wildReturns: 0.02 });
      const res = generate(exec, {
        msrs: msrs({ preset: "skylake", caps: { ptwrite: false }, ctl: BRANCHES }),
      });
      const cwd = mkdtempSync(join(dir, "prog-"));
      const argv = [
        "--quiet",
        "--stat:insn",
        ...writeProgramFiles(cwd, program, res.bytes),
        "--pt",
        "trace.pt",
      ];
      const store = new CountingStore(`prog${seed}`);
      const runs = await sameFlow(cwd, argv, store);
      assert.equal(runs[1]!.fast?.status, 0, runs[1]!.fast?.reason);
      assert.equal(store.hits, 1);
      // The last byte of the code (past what runs) changed: another key, a miss, a second file.
      const code = readFileSync(join(cwd, "code.bin"));
      code[code.length - 1] ^= 0xff;
      writeFileSync(join(cwd, "code.bin"), code);
      store.reset();
      await sameFlow(cwd, argv, store);
      assert.deepEqual({ hits: store.hits, misses: store.misses }, { hits: 1, misses: 1 });
      assert.equal(store.graphFiles().length, 2);
    }
  });

  test("a corrupt or foreign graph file: a miss, the same output, the file made anew", async () => {
    const w = smallFuzz();
    const argv = ["--quiet", "--stat:insn", ...largeFlowArgs(w), "--pt", w.trace];
    const store = new CountingStore("corrupt");
    await sameFlow(dir, argv, store);
    const [name] = store.graphFiles();
    const path = join(store.files.dir, name!);
    const good = readFileSync(path);
    for (const bad of [
      good.subarray(0, good.length >> 1),
      Buffer.concat([good, Buffer.alloc(4)]),
      Buffer.from(good.map((b, i) => (i === good.length - 3 ? b ^ 0x10 : b))),
      Buffer.from("not a graph at all"),
      Buffer.alloc(0),
    ]) {
      writeFileSync(path, bad);
      store.reset();
      const plain = await flow(dir, argv);
      const r = await flow(dir, argv, store);
      assert.deepEqual(
        { code: r.code, out: r.out, err: r.err },
        { code: plain.code, out: plain.out, err: plain.err },
      );
      // Read (a hit of bytes), refused, and written again whole.
      assert.equal(store.saves, 1);
      assert.ok(readFileSync(path).equals(good));
    }
  });

  test("a store that cannot write: no error, the same output", async () => {
    const w = smallFuzz();
    const argv = ["--quiet", "--stat:insn", ...largeFlowArgs(w), "--pt", w.trace];
    // A file where the directory should be.
    const notADir = join(dir, "not-a-dir");
    writeFileSync(notADir, "x");
    const io = captureIo(dir);
    io.graphs = new FileGraphStore(join(notADir, "cache"));
    const code = await runFlow(["--jobs", "1", ...argv], io);
    assert.equal(code, 0);
    assert.equal(io.out.join(""), `insn: ${w.insns}.\n`);
    assert.equal(io.err.join(""), "");
  });
});

describe("ptkit perf: the fast path's graphs kept between runs", () => {
  const HASE = "real/hase";
  const capture = "2018-05/control_flow-20180515T180451";
  test("a HASE capture's timeline and folded stacks: the same bytes from a later run, the graphs taken", {
    skip: skipUnlessCorpus(HASE, "2018-05"),
  }, () => {
    const data = corpusPath(HASE, capture, "perf.data.1")!;
    const symfs = corpusPath(HASE, capture, "binaries")!;
    const args = ["--symfs", symfs, "-q", "--timeline", "t.json", "--folded", "f.txt", data];
    const run = (store?: GraphStore) => {
      const io = captureIo(dir);
      if (store) io.graphs = store;
      let fast: FastCoverage | undefined;
      const code = runPerf(args, io, EMPTY_HOME, { onFastPath: (r) => (fast = r) });
      return {
        code,
        out: io.out.join(""),
        err: io.err.join(""),
        files: ["t.json", "f.txt"].map((f) => readFileSync(join(dir, f))),
        fast,
      };
    };
    const plain = run();
    assert.equal(plain.fast?.status, 0, plain.fast?.reason);
    const store = new CountingStore("perf");
    const saves: number[] = [];
    for (const _ of [1, 2]) {
      const r = run(store);
      assert.equal(r.fast?.status, 0, r.fast?.reason);
      assert.deepEqual(
        { code: r.code, out: r.out, err: r.err },
        { code: plain.code, out: plain.out, err: plain.err },
      );
      for (const [i, bytes] of r.files.entries())
        assert.ok(bytes.equals(plain.files[i]!), `file ${i} differs`);
      saves.push(store.saves);
    }
    // The first run kept the graph of the image that ran (those of images never entered
    // have no node); the later one took it and made no node to keep.
    assert.deepEqual(saves, [1, 1]);
    assert.equal(store.hits, 1);
  });
});

describe("GraphCache", () => {
  /** A store in memory, keyed by the image's first section's address. */
  const memory = () => {
    const files = new Map<string, Uint8Array>();
    const saved: string[] = [];
    const store: GraphStore = {
      key: (image) => `k${image.sections[0]!.startLo.toString(16)}`,
      load: (key) => files.get(key),
      save: (key, bytes) => {
        saved.push(key);
        files.set(key, bytes);
      },
    };
    return { store, files, saved };
  };
  /** An image of `ret` at `lo`. */
  const image = (lo: number) => {
    const img = new Image();
    img.addRaw("ret", Uint8Array.of(0x90, 0xc3), 0, lo);
    return img;
  };

  test("many graphs: the oldest are kept and let go as more come (at most 16 held), the rest at save", () => {
    const { store, saved } = memory();
    const cache = new GraphCache(store);
    for (let i = 0; i < 20; i++) {
      const lo = 0x400000 + i * 0x1000;
      const g = cache.graph(image(lo));
      assert.equal(g.node(0, lo), 0);
      // Each graph made a node by the time the next comes: the 17th to come keeps the 1st.
      assert.equal(saved.length, Math.max(0, i - 15), `graph ${i}`);
    }
    cache.save();
    assert.equal(saved.length, 20);
    assert.equal(new Set(saved).size, 20);
    // Saved again: nothing grew.
    cache.save();
    assert.equal(saved.length, 20);
  });

  test("a kept graph is taken; one whose image changed while in use is kept as the code was; an empty one or a full one is not kept", () => {
    const { store, saved } = memory();
    const a = image(0x400000);
    const first = new GraphCache(store);
    first.graph(a).node(0, 0x400000);
    first.save();
    assert.deepEqual(saved, ["k400000"]);
    const taken = new GraphCache(store).graph(image(0x400000));
    assert.equal(taken.size, 1);
    assert.equal(taken.node(0, 0x400000), 0);
    assert.equal(taken.size, 1);

    const cache = new GraphCache(store);
    // Changed while in use: the graph decodes a copy of the image as it was (the code its
    // key names), so code mapped later is not its own, and it is kept.
    const b = image(0x500000);
    const before = cache.graph(b);
    before.node(0, 0x500000);
    b.addRaw("more", Uint8Array.of(0xc3), 0, 0x600000);
    const later = before.node(0, 0x600000);
    assert.equal(before.nodes[later * NODE_WORDS + Node.Kind], NodeKind.Bad);
    // The image as it is now maps other code: another graph.
    const after = cache.graph(b);
    assert.notEqual(after, before);
    assert.notEqual(after.nodes[after.node(0, 0x600000) * NODE_WORDS + Node.Kind], NodeKind.Bad);
    // Empty.
    cache.graph(image(0x700000));
    // Full: its one node is all it may hold.
    cache.graph(image(0x800000), 1).node(0, 0x800000);
    cache.save();
    assert.deepEqual(saved, ["k400000", "k500000", "k500000"]);
  });

  test("images that map the same bytes at the same places share a graph (a perf.data's per-CPU streams); other bytes or places do not", () => {
    const code = Uint8Array.of(0x90, 0xc3);
    const mapped = (lo: number, bytes = code) => {
      const img = new Image();
      img.addRaw("ret", bytes, 0, lo);
      return img;
    };
    const cache = new GraphCache(undefined);
    const one = cache.graph(mapped(0x400000));
    assert.equal(cache.graph(mapped(0x400000)), one);
    assert.notEqual(cache.graph(mapped(0x500000)), one);
    assert.notEqual(cache.graph(mapped(0x400000, Uint8Array.of(0x90, 0xc3))), one);
    // Another budget: another graph.
    assert.notEqual(cache.graph(mapped(0x400000), 10), one);
  });
});
