/**
 * The WebAssembly map loop (analysis/wasm/map-loop.wat, run by map-loop-engine.ts)
 * against mapLoop, the JavaScript loop it stands in for: on the same traces, from the
 * same graphs, the same outcome (status, offset, reason), instruction count, AFL map
 * and graph (the same nodes made in the same order, the same words in them), whole
 * traces and traces read in small windows, with the bytes copied into the module's
 * memory a few at a time (packets cut at every edge), from a graph kept between runs,
 * with a graph that fills up, and on corrupted traces. The module's bytes are checked
 * against its source.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import fc from "fast-check";
import { loadFuzzWorkload } from "../../bench/fuzz-workload.js";
import { Coverage, decodeCount, decodeCoverage, type FastCoverage } from "../../src/analysis/index.js";
import { mapLoopChunk, mapLoopEngine, useWasmMapLoop } from "../../src/analysis/wasm/map-loop-engine.js";
import { MAP_LOOP_WASM_BASE64 } from "../../src/analysis/wasm/map-loop-wasm.js";
import { DecisionGraph, NODE_WORDS } from "../../src/flow/index.js";
import { parseElf } from "../../src/image/elf.js";
import { Image } from "../../src/image/index.js";
import { TraceBytes } from "../../src/packet/index.js";
import { assembleMapLoop, WAT_PATH } from "../../tools/build/map-loop-wasm.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-wasm-loop-"));
after(() => {
  rmSync(dir, { recursive: true, force: true });
  useWasmMapLoop(true);
  mapLoopChunk(2 << 20);
});

const w = loadFuzzWorkload({ cacheDir: dir, codeBytes: 16384, traceBytes: 80_000, caseInsns: 20_000 });
const image = new Image();
assert.ok(image.addElf(parseElf(new Uint8Array(readFileSync(w.elfs[0]!.path)))) > 0);
const traces = [new Uint8Array(readFileSync(w.trace)), new Uint8Array(readFileSync(w.timingTrace))];

interface Outcome {
  status: number;
  offset: number;
  reason: string;
  insns: number;
  map: Buffer | undefined;
  nodes: Int32Array;
}

/** A decode of `bytes` (whole, or read `window` bytes at a time) by one loop or the other. */
function run(
  bytes: Uint8Array,
  wasm: boolean,
  opts: { map?: boolean; window?: number; graph?: DecisionGraph; coverage?: Coverage } = {},
): Outcome {
  useWasmMapLoop(wasm);
  try {
    const graph = opts.graph ?? new DecisionGraph(image);
    const trace =
      opts.window === undefined
        ? TraceBytes.of(bytes)
        : TraceBytes.read({ size: bytes.length, read: (at, n) => bytes.slice(at, at + n) }, opts.window);
    const map = opts.map ?? true;
    const cov = map ? (opts.coverage ?? new Coverage(undefined, true)) : undefined;
    const r: FastCoverage = cov ? decodeCoverage(trace, graph, cov) : decodeCount(trace, graph);
    const nodes = graph.nodes.slice(0, graph.size * NODE_WORDS);
    return {
      status: r.status,
      offset: r.offset,
      reason: r.reason,
      insns: r.insns,
      map: cov ? Buffer.from(cov.aflMap) : undefined,
      nodes,
    };
  } finally {
    useWasmMapLoop(true);
  }
}

function same(got: Outcome, want: Outcome, what: string): void {
  assert.deepEqual(
    { status: got.status, offset: got.offset, reason: got.reason, insns: got.insns },
    { status: want.status, offset: want.offset, reason: want.reason, insns: want.insns },
    what,
  );
  assert.equal(got.map === undefined, want.map === undefined, `${what}: a map`);
  if (got.map !== undefined) assert.ok(got.map.equals(want.map!), `${what}: the map`);
  assert.deepEqual(got.nodes, want.nodes, `${what}: the graph's nodes`);
}

test("the module's bytes are map-loop.wat's", async () => {
  const bytes = await assembleMapLoop(readFileSync(WAT_PATH, "utf8"));
  assert.ok(
    Buffer.from(bytes).equals(Buffer.from(MAP_LOOP_WASM_BASE64, "base64")),
    "map-loop-wasm.ts is out of date: run node dist/tools/build/map-loop-wasm.js",
  );
});

test("the engine runs here (Node has WebAssembly), and not when switched off", () => {
  assert.ok(mapLoopEngine(new DecisionGraph(image)) !== undefined);
  useWasmMapLoop(false);
  try {
    assert.equal(mapLoopEngine(new DecisionGraph(image)), undefined);
  } finally {
    useWasmMapLoop(true);
  }
});

describe("the WebAssembly loop and mapLoop: the same decode", () => {
  test("the fuzzing traces (with and without timing and RET compression), the map and the count alone: whole, in small windows, copied in a few bytes at a time", () => {
    for (const [t, bytes] of traces.entries()) {
      for (const map of [true, false]) {
        const want = run(bytes, false, { map });
        assert.equal(want.status, 0, want.reason);
        const what = `trace ${t}, ${map ? "the map" : "the count"}`;
        same(run(bytes, true, { map }), want, what);
        for (const window of [5, 61, 4096])
          same(run(bytes, true, { map, window }), want, `${what}, ${window}-byte windows`);
        for (const bytesIn of [16, 17, 64, 4093]) {
          mapLoopChunk(bytesIn);
          try {
            same(run(bytes, true, { map }), want, `${what}, ${bytesIn} bytes copied in at a time`);
          } finally {
            mapLoopChunk(2 << 20);
          }
        }
      }
    }
  });

  test("a second decode with the graph the first made (warm: no node to make), and the caller's map array kept", () => {
    for (const bytes of traces) {
      const jsGraph = new DecisionGraph(image);
      const wasmGraph = new DecisionGraph(image);
      const jsCov = new Coverage(undefined, true);
      const wasmCov = new Coverage(undefined, true);
      const map = wasmCov.aflMap;
      for (let round = 0; round < 2; round++) {
        // The map adds up over the two decodes (nothing cleared), saturating.
        const want = run(bytes, false, { graph: jsGraph, coverage: jsCov });
        const got = run(bytes, true, { graph: wasmGraph, coverage: wasmCov });
        same(got, want, `round ${round}`);
        assert.equal(wasmCov.aflMap, map, "the Coverage's own map array after the decode");
      }
      assert.ok(wasmGraph.memory !== undefined, "the graph is in the module's memory");
    }
  });

  test("a graph kept between runs (taken with adopt) walks in the module's memory again", () => {
    const made = new DecisionGraph(image);
    const want = run(traces[0]!, false, { graph: made });
    const s = made.state();
    const kept = new DecisionGraph(image);
    kept.adopt({
      ...s,
      nodes: s.nodes.slice(),
      cold: s.cold.slice(),
      flags: s.flags.slice(),
      slots: s.slots.slice(),
    });
    same(run(traces[0]!, true, { graph: kept }), want, "kept");
    // And once more, adopted into a graph that had been in a module's memory.
    const again = new DecisionGraph(image);
    run(traces[1]!, true, { graph: again });
    again.adopt({
      ...s,
      nodes: s.nodes.slice(),
      cold: s.cold.slice(),
      flags: s.flags.slice(),
      slots: s.slots.slice(),
    });
    assert.equal(again.memory, undefined);
    same(run(traces[0]!, true, { graph: again }), want, "adopted after a walk");
  });

  test("a graph that fills up: the same hand-over", () => {
    for (const maxNodes of [3, 40, 300]) {
      const want = run(traces[0]!, false, { graph: new DecisionGraph(image, maxNodes) });
      assert.ok(want.status < 0, `${maxNodes} nodes: the JavaScript loop hands over`);
      same(run(traces[0]!, true, { graph: new DecisionGraph(image, maxNodes) }), want, `${maxNodes} nodes`);
    }
  });

  test("corrupted traces: the same outcome, count and map (property)", () => {
    const bytes = traces[1]!;
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(bytes.length - 1), fc.integer({ min: 0, max: 255 })), {
          minLength: 1,
          maxLength: 8,
        }),
        fc.integer({ min: 16, max: 300 }),
        (edits, bytesIn) => {
          const bad = bytes.slice(0, Math.min(bytes.length, 6000));
          for (const [at, v] of edits) bad[at % bad.length] = v;
          const want = run(bad, false);
          mapLoopChunk(bytesIn);
          try {
            same(run(bad, true), want, "corrupted");
          } finally {
            mapLoopChunk(2 << 20);
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
