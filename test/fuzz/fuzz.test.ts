/**
 * The fuzzer's deterministic parts: the PRNG, the mutations, case generation, the
 * verdict on a ptkit run and the grouping of failures by signature.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { CLI_EVERY, formatOf, makeCase, perfDeclaredEnd } from "../../tools/fuzz/cases.js";
import { MAX_MUTANT, MUTATIONS, mutate, mutateOnce } from "../../tools/fuzz/mutate.js";
import { Rng } from "../../tools/fuzz/prng.js";
import { FORMATS, type Format, type Seed } from "../../tools/fuzz/seeds.js";
import { hasStack, signatureOf, stackSignature, Triage } from "../../tools/fuzz/triage.js";
import { INPUT } from "../../tools/fuzz/types.js";
import { judgeCommand } from "../../tools/fuzz/worker.js";

const bytes = (n: number) => Uint8Array.from({ length: n }, (_, i) => (i * 37 + 11) & 0xff);

test("the PRNG: case i of seed s is the same stream every time, and other cases differ", () => {
  const draw = (s: number, i: number) =>
    Array.from(
      { length: 8 },
      (
        (r) => () =>
          r.u32()
      )(new Rng(s, i)),
    );
  assert.deepEqual(draw(7, 3), draw(7, 3));
  assert.notDeepEqual(draw(7, 3), draw(7, 4));
  assert.notDeepEqual(draw(7, 3), draw(8, 3));
  const r = new Rng(1, 1);
  for (let i = 0; i < 1000; i++) {
    const v = r.below(10);
    assert.ok(Number.isInteger(v) && v >= 0 && v < 10);
  }
});

test("each mutation does what it says, and never changes its input", () => {
  const input = bytes(300);
  const copy = input.slice();
  const other = new Uint8Array(50).fill(0xaa);
  for (let i = 0; i < 200; i++) {
    const rng = new Rng(5, i);
    const kind = MUTATIONS[i % MUTATIONS.length]!;
    const { bytes: out } = mutateOnce(rng, input, kind, other);
    assert.deepEqual(input, copy);
    const changed = [...out].filter((b, j) => b !== input[j]).length;
    switch (kind) {
      case "flip": {
        assert.equal(out.length, input.length);
        const diff = [...out].map((b, j) => b ^ input[j]!).filter((x) => x !== 0);
        assert.equal(diff.length, 1);
        assert.equal(diff[0]! & (diff[0]! - 1), 0, "one bit");
        break;
      }
      case "set8":
      case "random8":
        assert.equal(out.length, input.length);
        assert.ok(changed <= 1);
        break;
      case "set32":
        assert.equal(out.length, input.length);
        assert.ok(changed <= 4);
        break;
      case "dup":
      case "insert":
        assert.ok(out.length >= input.length);
        break;
      case "delete":
      case "truncate":
        assert.ok(out.length < input.length);
        if (kind === "truncate") assert.deepEqual(out, input.subarray(0, out.length));
        break;
      case "splice":
        assert.ok(out.includes(0xaa));
        break;
    }
  }
  // An empty input grows; nothing grows past the bound.
  assert.ok(mutateOnce(new Rng(1), new Uint8Array(0), "truncate").bytes.length > 0);
  const big = new Uint8Array(MAX_MUTANT);
  for (let i = 0; i < 20; i++) assert.ok(mutate(new Rng(2, i), big, big).bytes.length <= MAX_MUTANT);
});

function seedsOf(seed: Partial<Seed>): Record<Format, Seed[]> {
  const s: Seed = { name: "t", bytes: bytes(100), inputName: "t.pt", cwd: "/", ...seed };
  return Object.fromEntries(FORMATS.map((f) => [f, [s]])) as unknown as Record<Format, Seed[]>;
}

test("cases: the same (seed, index) gives the same case; ranges keep the bytes before `to`", () => {
  const seeds = seedsOf({ argv: ["dump", INPUT], rangeable: true });
  for (let i = 0; i < 100; i++)
    assert.deepEqual(makeCase(seeds, ["raw"], 9, i), makeCase(seeds, ["raw"], 9, i));
  let ranged = 0;
  for (let i = 0; i < 200; i++) {
    const c = makeCase(seeds, ["raw"], 9, i);
    if (!c.variant) continue;
    ranged++;
    const m = /^@@:0x0-0x([0-9a-f]+)$/.exec(c.argv![1]!);
    assert.ok(m, c.argv!.join(" "));
    const to = Number.parseInt(m[1]!, 16);
    assert.deepEqual(c.variant.subarray(0, to), c.input.subarray(0, to));
  }
  assert.ok(ranged > 20, `${ranged} range cases`);
});

test("formats take turns; a real process once every few rounds", () => {
  const formats: Format[] = ["raw", "perf", "cli"];
  const seq = Array.from({ length: 2 * (2 * CLI_EVERY + 1) }, (_, i) => formatOf(formats, i));
  assert.equal(seq.filter((f) => f === "cli").length, 2);
  assert.equal(seq.filter((f) => f === "raw").length, 2 * CLI_EVERY);
  assert.deepEqual(seq.slice(0, 3), ["raw", "perf", "raw"]);
  assert.equal(formatOf(["cli"], 5), "cli");
});

test("perf.data's declared end: past the data and feature sections, Infinity when not known", () => {
  const f = new Uint8Array(0x200);
  f.set(new TextEncoder().encode("PERFILE2"));
  const view = new DataView(f.buffer);
  view.setUint32(8, 104, true); // header size
  view.setUint32(24, 104, true); // attrs at 104, 16 bytes
  view.setUint32(32, 16, true);
  view.setUint32(40, 0x80, true); // data at 0x80, 0x40 bytes
  view.setUint32(48, 0x40, true);
  f[72] = 0b101; // two features: table at 0xc0, 32 bytes
  view.setUint32(0xc0, 0xe0, true); // one section [0xe0, 0xf0), one [0x100, 0x180)
  view.setUint32(0xc8, 0x10, true);
  view.setUint32(0xd0, 0x100, true);
  view.setUint32(0xd8, 0x80, true);
  assert.equal(perfDeclaredEnd(f), 0x180);
  assert.equal(perfDeclaredEnd(f.subarray(0, 0xc8)), Infinity, "table cut off");
  view.setUint32(48, 0, true);
  assert.equal(perfDeclaredEnd(f), Infinity, "data size 0: to the end of the file");
  assert.equal(perfDeclaredEnd(new TextEncoder().encode("PERFILE2".padEnd(200, "x"))), Infinity);
  assert.equal(perfDeclaredEnd(bytes(200)), Infinity);
});

const STACK = (msg: string, col: number) =>
  `ptkit: internal error: RangeError: ${msg}\n` +
  `    at toTsc (file:///x/dist/src/perf/time-conv.js:42:${col})\n` +
  "    at PerfTimes.convert (file:///x/dist/src/perf/reader.js:10:3)\n" +
  "This is a bug in ptkit: please report it with the command line and, if you can, the input files.\n";

test("a ptkit run fails on exit 70 or a printed stack; bad-input messages pass", () => {
  assert.equal(judgeCommand("perf", 70, STACK("too big", 1))?.kind, "internal");
  assert.equal(judgeCommand("perf", 1, `ptkit: oops\n${STACK("x", 1)}`)?.kind, "stack");
  assert.equal(
    judgeCommand("raw", 1, "ptkit dump: x.pt: no PSB at offset 0x10: is this a raw trace?\n"),
    undefined,
  );
  assert.equal(judgeCommand("raw", 0, ""), undefined);
  assert.ok(hasStack("    at main (node:internal/main:1:2)"));
  assert.ok(!hasStack("ptkit: at offset 0x10: bad packet"));
});

test("signatures: error type and top frame; hangs and memory by kind and format", () => {
  assert.equal(stackSignature(STACK("a", 5)), "RangeError at toTsc (time-conv.js:42)");
  assert.equal(
    stackSignature("Error: not a regular file\n    at Object.fileSize (file:///d/node-io.js:46:35)"),
    "Error at Object.fileSize (node-io.js:46)",
  );
  assert.equal(stackSignature("    at file:///d/a.js:3:4"), "non-Error at <anonymous> (a.js:3)");
  const t = new Triage();
  assert.equal(t.add({ format: "perf", kind: "internal", detail: STACK("a", 5) }).isNew, true);
  // Another message and column, another format: the same bug.
  assert.equal(t.add({ format: "cli", kind: "internal", detail: STACK("b", 9) }).isNew, false);
  assert.equal(t.add({ format: "perf", kind: "hang", detail: "no result in 5000 ms" }).isNew, true);
  assert.equal(t.add({ format: "perf", kind: "hang", detail: "other" }).isNew, false);
  assert.equal(t.add({ format: "insn", kind: "hang", detail: "" }).isNew, true);
  assert.equal(t.add({ format: "insn", kind: "oom", detail: "" }).isNew, true);
  assert.equal(t.size, 4);
  const [first] = t.list();
  assert.deepEqual(
    [...first!.counts],
    [
      ["perf", 1],
      ["cli", 1],
    ],
  );
  assert.equal(signatureOf({ format: "raw", kind: "past-end", detail: "" }), "past-end: raw");
});
