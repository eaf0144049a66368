/**
 * The decision graphs the CLI keeps in files between runs (node/graph-store.ts): the
 * key follows the code (bytes, addresses, the fallback image), files are replaced
 * whole and the least recently used go past the cap, the environment chooses the
 * directory (none under `node --test` unless named), and the real command prints
 * the same from a later run, on one thread and in `--jobs` pieces.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync, truncateSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { loadFuzzWorkload } from "../../bench/fuzz-workload.js";
import { largeFlowArgs } from "../../bench/large-workload.js";
import { runFlow } from "../../src/cli/flow/flow.js";
import { CHUNK_WORKER } from "../../src/cli/ptkit.js";
import { Image } from "../../src/image/index.js";
import { FileGraphStore, graphStoreFromEnv } from "../../src/node/graph-store.js";
import { WorkerPool } from "../../src/node/workers.js";
import { captureIo } from "../conformance/ptt.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-graph-store-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const CLI = fileURLToPath(new URL("../../cli/ptkit.js", import.meta.url));

function image(bytes: Uint8Array, lo = 0x400000, fallback: Image | null = null): Image {
  const i = new Image("", fallback);
  i.addRaw("code", bytes, 0, lo);
  return i;
}

describe("the key", () => {
  const store = new FileGraphStore(join(dir, "keys"));
  const code = Uint8Array.from({ length: 4096 }, (_, i) => (i * 7) & 0xff);

  test("the same for the same bytes at the same address, in another buffer", () => {
    const k = store.key(image(code));
    assert.match(k!, /^[0-9a-f]{40}$/);
    assert.equal(store.key(image(code.slice())), k);
  });

  test("only the bytes a section maps count, not the rest of its file (DWARF a file read in part has as zeros)", () => {
    const file = Uint8Array.from({ length: 8192 }, (_, i) => (i * 13) & 0xff);
    const mapped = (bytes: Uint8Array) => {
      const i = new Image();
      i.addSection("code", bytes, 1024, 2048, 0, 0x400000);
      return store.key(i);
    };
    const k = mapped(file);
    const outside = file.slice();
    outside.fill(0, 4096);
    outside[100] ^= 1;
    assert.equal(mapped(outside), k);
    const inside = file.slice();
    inside[1024 + 2047] ^= 1;
    assert.notEqual(mapped(inside), k);
  });

  test("another for a changed byte, another address, another fallback, zero fill", () => {
    const k = store.key(image(code));
    const changed = code.slice();
    changed[4000] ^= 1;
    const keys = [
      k,
      store.key(image(changed)),
      store.key(image(code, 0x401000)),
      store.key(image(code, 0x400000, image(code, 0x800000))),
      store.key(image(code, 0x400000, image(changed, 0x800000))),
    ];
    const zero = new Image();
    zero.addSection("bss", null, 0, 4096, 0, 0x400000);
    keys.push(store.key(zero));
    assert.equal(new Set(keys).size, keys.length);
  });

  test("another build of ptkit (the store's module written again): another key", () => {
    const module = fileURLToPath(new URL("../../src/node/graph-store.js", import.meta.url));
    const st = statSync(module);
    const keyAt = (seconds: number) => {
      utimesSync(module, st.atime, seconds);
      return new FileGraphStore(store.dir).key(image(code));
    };
    try {
      // Whole seconds: exact on every file system.
      const then = Math.floor(st.mtimeMs / 1000) - 120;
      const a = keyAt(then);
      assert.equal(keyAt(then), a);
      assert.notEqual(keyAt(then + 1), a);
    } finally {
      utimesSync(module, st.atime, st.mtime);
    }
  });
});

describe("the files", () => {
  test("saved and loaded; a missing key is a miss; no temporary file left", () => {
    const store = new FileGraphStore(join(dir, "files", "deeper"));
    assert.equal(store.load("a".repeat(40)), undefined);
    const bytes = Uint8Array.from([1, 2, 3, 4]);
    store.save("b".repeat(40), bytes);
    assert.deepEqual(store.load("b".repeat(40)), bytes);
    assert.deepEqual(readdirSync(store.dir), [`${"b".repeat(40)}.graph`]);
  });

  test("a file too large to be a graph is not read (memory stays bounded)", () => {
    const store = new FileGraphStore(join(dir, "huge"));
    store.save("d".repeat(40), new Uint8Array(8));
    // Sparse: 400 MiB that take no room.
    truncateSync(join(store.dir, `${"d".repeat(40)}.graph`), 400 * 1024 * 1024);
    assert.equal(store.load("d".repeat(40)), undefined);
  });

  test("past the cap, the least recently used go", () => {
    const store = new FileGraphStore(join(dir, "cap"), 2500);
    const key = (c: string) => c.repeat(40);
    const kb = new Uint8Array(1000);
    store.save(key("a"), kb);
    store.save(key("b"), kb);
    // a older than b, then a used: b is the least recently used.
    const past = new Date(Date.now() - 60_000);
    utimesSync(join(store.dir, `${key("a")}.graph`), past, past);
    utimesSync(
      join(store.dir, `${key("b")}.graph`),
      new Date(Date.now() - 30_000),
      new Date(Date.now() - 30_000),
    );
    assert.ok(store.load(key("a")) !== undefined);
    // A run killed while writing left temporary files: those an hour old go.
    const killed = join(store.dir, `${key("d")}.graph.1.x.tmp`);
    const writing = join(store.dir, `${key("e")}.graph.2.y.tmp`);
    writeFileSync(killed, kb);
    writeFileSync(writing, kb);
    const hourAgo = new Date(Date.now() - 3700_000);
    utimesSync(killed, hourAgo, hourAgo);
    store.save(key("c"), kb);
    assert.deepEqual(readdirSync(store.dir).sort(), [
      `${key("a")}.graph`,
      `${key("c")}.graph`,
      `${key("e")}.graph.2.y.tmp`,
    ]);
  });

  test("a directory that cannot be made or written: no throw, a miss", () => {
    const file = join(dir, "a-file");
    writeFileSync(file, "x");
    const store = new FileGraphStore(join(file, "cache"));
    store.save("c".repeat(40), new Uint8Array(8));
    assert.equal(store.load("c".repeat(40)), undefined);
    assert.ok(statSync(file).isFile());
  });
});

describe("the environment", () => {
  test("PTKIT_CACHE_DIR names it or turns it off; none under node --test unless named; else XDG_CACHE_HOME or ~/.cache", () => {
    assert.equal(graphStoreFromEnv({ PTKIT_CACHE_DIR: "off", HOME: dir }), undefined);
    assert.equal(graphStoreFromEnv({ PTKIT_CACHE_DIR: "", HOME: dir }), undefined);
    const named = graphStoreFromEnv({ PTKIT_CACHE_DIR: join(dir, "named"), NODE_TEST_CONTEXT: "child" });
    assert.equal((named as FileGraphStore).dir, join(dir, "named"));
    assert.equal(graphStoreFromEnv({ NODE_TEST_CONTEXT: "child", HOME: dir }), undefined);
    const xdg = graphStoreFromEnv({ XDG_CACHE_HOME: join(dir, "xdg"), HOME: dir });
    assert.equal((xdg as FileGraphStore).dir, join(dir, "xdg", "ptkit"));
    const home = graphStoreFromEnv({ HOME: join(dir, "home") });
    assert.equal((home as FileGraphStore).dir, join(dir, "home", ".cache", "ptkit"));
  });
});

describe("the command", () => {
  const w = loadFuzzWorkload({ cacheDir: dir, codeBytes: 16384, traceBytes: 80_000, caseInsns: 20_000 });
  const argv = ["flow", "--quiet", "--stat:insn", ...largeFlowArgs(w), "--pt", w.timingTrace];

  test("ptkit flow: a later run prints the same, from the graph the first kept", () => {
    const cache = join(dir, "cli-cache");
    const run = (env: Record<string, string>) => {
      const r = spawnSync(process.execPath, [CLI, ...argv], {
        encoding: "utf8",
        env: { ...process.env, ...env },
      });
      return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    };
    const cold = run({ PTKIT_CACHE_DIR: "off" });
    assert.equal(cold.stdout, `insn: ${w.insns}.\n`);
    assert.deepEqual(run({ PTKIT_CACHE_DIR: cache }), cold);
    const files = readdirSync(cache);
    assert.equal(files.length, 1);
    assert.match(files[0]!, /^[0-9a-f]{40}\.graph$/);
    const made = statSync(join(cache, files[0]!)).size;
    assert.deepEqual(run({ PTKIT_CACHE_DIR: cache }), cold);
    assert.deepEqual(readdirSync(cache), files);
    assert.equal(statSync(join(cache, files[0]!)).size, made);
  });

  test("in --jobs pieces: each thread takes the graph and keeps what it grew", async () => {
    const cache = join(dir, "jobs-cache");
    const before = process.env.PTKIT_CACHE_DIR;
    // The threads read the environment they start with.
    process.env.PTKIT_CACHE_DIR = cache;
    const pool = new WorkerPool(CHUNK_WORKER, true, 256);
    try {
      const count = async (jobs: number) => {
        const io = captureIo(dir);
        io.chunks = pool;
        // The command's thread counts pieces too, with the store the CLI gives it.
        io.graphs = graphStoreFromEnv();
        let pieces = 0;
        const code = await runFlow(["--jobs", String(jobs), ...argv.slice(1)], io, {
          onCountPieces: (c, n) => {
            assert.equal(c, w.insns);
            pieces = n;
          },
        });
        return { code, out: io.out.join(""), pieces };
      };
      const first = await count(3);
      assert.equal(first.out, `insn: ${w.insns}.\n`);
      assert.ok(first.pieces > 8);
      const files = readdirSync(cache);
      assert.equal(files.length, 1);
      // A fresh pool: threads that start from the file.
      await pool.close();
      const again = new WorkerPool(CHUNK_WORKER, true, 256);
      try {
        const io = captureIo(dir);
        io.chunks = again;
        io.graphs = graphStoreFromEnv();
        const code = await runFlow(["--jobs", "3", ...argv.slice(1)], io);
        assert.equal(code, 0);
        assert.equal(io.out.join(""), first.out);
      } finally {
        await again.close();
      }
      assert.deepEqual(readdirSync(cache), files);
    } finally {
      await pool.close();
      if (before === undefined) delete process.env.PTKIT_CACHE_DIR;
      else process.env.PTKIT_CACHE_DIR = before;
    }
  });
});
