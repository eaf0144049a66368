/**
 * Shard plans: the id is a hash of the contents (FNV-1a 64 of canonical JSON, checked
 * against a BigInt computation), plans read back as written, and a damaged or edited
 * plan is refused with what is wrong.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { makePlan, parsePlan, planId, planText } from "../../src/shard/index.js";

const inputs = [{ path: "host1/perf.data", kind: "perf.data" as const, bytes: 81234 }];
const shards = [
  { input: 0, stream: 0, cpus: [0], tids: [-1], traceBytes: 4096 },
  { input: 0, stream: 1, cpus: [1], tids: [-1], traceBytes: 8192 },
];

/** FNV-1a 64 the plain way. */
function fnv(text: string): string {
  let h = 0xcbf29ce484222325n;
  for (const b of new TextEncoder().encode(text))
    h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return h.toString(16).padStart(16, "0");
}

test("the plan id is FNV-1a 64 of the contents' canonical JSON (keys sorted)", () => {
  const body = { options: ["--kcore", "k", "é"], inputs, shards };
  const canonical =
    '{"inputs":[{"bytes":81234,"kind":"perf.data","path":"host1/perf.data"}],"options":["--kcore","k","é"],' +
    '"shards":[{"cpus":[0],"input":0,"stream":0,"tids":[-1],"traceBytes":4096},{"cpus":[1],"input":0,"stream":1,"tids":[-1],"traceBytes":8192}]}';
  assert.equal(planId(body), fnv(canonical));
  assert.notEqual(planId({ ...body, options: [] }), planId(body));
});

test("a plan reads back as written; edits and damage are refused", () => {
  const plan = makePlan(["--elf", "prog"], inputs, shards);
  const text = planText(plan);
  assert.deepEqual(parsePlan(text), plan);
  assert.equal(text.split("\n").length, shards.length + 3, "a shard per line");
  const edited = JSON.parse(text);
  edited.shards[1].stream = 5;
  assert.match(parsePlan(JSON.stringify(edited)) as string, /does not match its contents/);
  assert.match(parsePlan("{") as string, /^not JSON/);
  assert.match(parsePlan("[]") as string, /not a shard plan/);
  assert.match(parsePlan(JSON.stringify({ ...plan, version: 2 })) as string, /version 2/);
  assert.match(
    parsePlan(JSON.stringify({ ...plan, shards: [{ input: 3, traceBytes: 1 }] })) as string,
    /bad shard 0/,
  );
  assert.match(parsePlan(JSON.stringify({ ...plan, inputs: [{ path: 1 }] })) as string, /bad input 0/);
  assert.match(parsePlan(JSON.stringify({ ...plan, options: [1] })) as string, /bad "options"/);
});
