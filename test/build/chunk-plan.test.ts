/** tools/build/chunk-plan.ts: which small chunks of the bundled executable merge into larger ones. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type PlanModule, planChunks } from "../../tools/build/chunk-plan.js";

const mod = (bytes: number, imports: string[] = [], extra: Partial<PlanModule> = {}): PlanModule => ({
  bytes,
  imports,
  dynamic: [],
  importsPackage: false,
  ...extra,
});

/**
 * The executable's entry `main` (with `io`) loads commands `a`, `b`, `c` on demand.
 * Shared by the commands: `tiny` (a, b), `big` (a, b, c), `pkg` (a, c: imports a
 * package), `cyc1`/`cyc2` (b, c: an import cycle).
 */
function graph(): Map<string, PlanModule> {
  return new Map([
    ["main", mod(500, ["io"], { dynamic: ["a", "b", "c"] })],
    ["io", mod(300)],
    ["a", mod(2000, ["io", "tiny", "big", "pkg"])],
    ["b", mod(2000, ["tiny", "big", "cyc1"])],
    ["c", mod(2000, ["big", "pkg", "cyc1"])],
    ["tiny", mod(100)],
    ["big", mod(50_000)],
    ["pkg", mod(100, [], { importsPackage: true })],
    ["cyc1", mod(100, ["cyc2"])],
    ["cyc2", mod(100, ["cyc1"])],
  ]);
}

test("a small chunk joins the larger chunk whose entries include its own", () => {
  const plan = planChunks(graph(), "main", 20_000);
  // `tiny` (a, b) joins `big` (a, b, c): c imports it at its end. `pkg` and the cycle stay.
  assert.deepEqual([...plan.additions], [["c", ["tiny"]]]);
  for (const [entry, files] of [
    ["a", 1],
    ["b", 1],
    ["c", 0],
  ] as const) {
    const before = plan.before.get(entry)!;
    const after = plan.after.get(entry)!;
    assert.equal(after.files, before.files - files, `${entry}: files`);
    assert.equal(after.bytes, before.bytes + (entry === "c" ? 100 : 0), `${entry}: bytes`);
  }
  assert.deepEqual(plan.after.get("main"), plan.before.get("main"), "the entry loads what it did");
});

test("no merge when files cost nothing or the small chunk is over the limit", () => {
  assert.deepEqual([...planChunks(graph(), "main", 0).additions], []);
  assert.deepEqual([...planChunks(graph(), "main", 20_000, 99).additions], []);
  assert.deepEqual([...planChunks(graph(), "main", 20_000, 100).additions], [["c", ["tiny"]]]);
});

test("a merge that would bring a package or an import cycle to another entry is not made", () => {
  /** `tiny` (a, b) imports `dep`; without the rules it would join `big` (a, b, c). */
  const withDep = (dep: Map<string, PlanModule>) => {
    const g = graph();
    g.set("tiny", mod(100, ["dep"]));
    for (const [name, m] of dep) g.set(name, m);
    return planChunks(g, "main", 20_000).additions;
  };
  // (`dep` is reached by a and b too: it is part of tiny's chunk and moves with it.)
  assert.deepEqual([...withDep(new Map([["dep", mod(100)]]))], [["c", ["tiny", "dep"]]]);
  assert.deepEqual([...withDep(new Map([["dep", mod(100, [], { importsPackage: true })]]))], []);
  const cycle = new Map([
    ["dep", mod(100, ["dep2"])],
    ["dep2", mod(100, ["dep"])],
  ]);
  assert.deepEqual([...withDep(cycle)], []);
});
