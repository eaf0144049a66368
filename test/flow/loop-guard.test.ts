/**
 * The loop guard (src/flow/loop-guard.ts): code that loops without needing trace while
 * trace is left that it never reaches ends in an error instead of being followed
 * forever (libipt walks it without end), the same from both decoders wherever blocks
 * end; code that goes on through distinct addresses is never cut short. Random code
 * that loops is covered by the resync properties (resync.test.ts).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { defaultDecoderConfig } from "../../src/event/config.js";
import { LOOP_CHECK_AFTER } from "../../src/flow/index.js";
import { Image } from "../../src/image/index.js";
import { Trace } from "../event/helpers.js";
import { addCode } from "./asm.js";
import { hx, runBlocks, runInsns } from "./run.js";

test("a direct jump to itself with trace left that it never reaches ends in an error, from both decoders", () => {
  const image = new Image("self-loop");
  addCode(image, Uint8Array.from([0x36, 0xeb, 0xfd]), 0x1000n); // ss jmp 0x1000
  // The TNT bit is for a conditional branch the loop never gets to.
  const trace = new Trace().psb().mode(64).fup(0x1000n).psbend().tnt("!").bytes();
  // LOOP_CHECK_AFTER instructions without trace, then one more back to 0x1000: a loop.
  const want = [
    ...Array<string>(LOOP_CHECK_AFTER + 1).fill("0x1000"),
    "[error: trace stream does not match query]",
    "[resync error: reached end of trace stream]",
  ];
  for (const run of [runInsns, runBlocks]) {
    const t = run(trace, { image, resync: true, limit: 2 * LOOP_CHECK_AFTER });
    assert.deepEqual(t.lines, want, run.name);
  }
});

test("a loop without trace behind a tail, with calls, ends once the walk is back where it was", () => {
  const image = new Image("tail-loop");
  // 1000 nop; 1001 nop; 1002 call 1009; 1007 int3 int3
  // 1009 nop; 100a call 100f; 100f jmp 1009
  const code = [0x90, 0x90, 0xe8, 2, 0, 0, 0, 0xcc, 0xcc, 0x90, 0xe8, 0, 0, 0, 0, 0xeb, 0xf8];
  addCode(image, Uint8Array.from(code), 0x1000n);
  // A disable at an IP the code never reaches.
  const trace = new Trace().psb().mode(64).fup(0x1000n).psbend().fup(0x2000n).pgd().bytes();
  const loop = ["0x1009", "0x100a", "0x100f"];
  // Ten instructions without trace, then Brent's check from 0x100a: it meets 0x100f
  // after one step, 0x100a after two, and is back at 0x100a three steps later.
  const want = [
    ...["0x1000", "0x1001", "0x1002", ...loop, ...loop, "0x1009"],
    ...["0x100a", "0x100f", "0x1009", "0x100a", "0x100f", "0x1009"],
    "[error: trace stream does not match query]",
    "[async-disabled 0x2000->-]",
  ];
  for (const config of [{}, { endOnCall: true, endOnJump: true }]) {
    const options = {
      image,
      resync: true,
      loopCheckAfter: 10,
      config: { ...defaultDecoderConfig(), ...config },
    };
    for (const run of [runInsns, runBlocks]) {
      assert.deepEqual(run(trace, options).lines, want, `${run.name} ${JSON.stringify(config)}`);
    }
  }
});

test("a long chain of direct jumps and calls to distinct addresses is not cut short", () => {
  // jmp +1; int3; call +2; int3; int3: two instructions, ten bytes, onward.
  const unit = [0xeb, 1, 0xcc, 0xe8, 2, 0, 0, 0, 0xcc, 0xcc];
  const units = Math.ceil(LOOP_CHECK_AFTER / 2) + 1000;
  const code = new Uint8Array(units * unit.length + 4);
  for (let i = 0; i < units; i++) code.set(unit, i * unit.length);
  // Then je +0 (takes the TNT bit) and jmp rax, where tracing stops.
  code.set([0x74, 0, 0xff, 0xe0], units * unit.length);
  const image = new Image("chain");
  addCode(image, code, 0x1000n);
  const trace = new Trace().psb().mode(64).fup(0x1000n).psbend().tnt("!").pgd().bytes();
  const want: string[] = [];
  for (let i = 0; i < units; i++) want.push(hx(0x1000n + BigInt(i * 10)), hx(0x1003n + BigInt(i * 10)));
  const end = 0x1000n + BigInt(units * unit.length);
  want.push(hx(end), hx(end + 2n), "[disabled -]");
  for (const loopCheckAfter of [undefined, 1]) {
    for (const run of [runInsns, runBlocks]) {
      const t = run(trace, { image, loopCheckAfter, limit: 2 * want.length });
      assert.deepEqual(t.lines, want, `${run.name}, loopCheckAfter ${loopCheckAfter}`);
    }
  }
});

test("a loop that takes a TNT bit each time round is no loop without trace, whatever the bound", () => {
  // 1000 je 1000 (taken 40 times, then not); 1002 jmp rax, where tracing stops.
  const image = new Image("tnt-loop");
  addCode(image, Uint8Array.from([0x74, 0xfe, 0xff, 0xe0]), 0x1000n);
  const trace = new Trace().psb().mode(64).fup(0x1000n).psbend();
  for (let i = 0; i < 8; i++) trace.tnt("!!!!!");
  trace.tnt(".").pgd();
  const want = [...Array<string>(41).fill("0x1000"), "0x1002", "[disabled -]"];
  for (const loopCheckAfter of [1, 2, 40]) {
    for (const run of [runInsns, runBlocks]) {
      assert.deepEqual(
        run(trace.bytes(), { image, loopCheckAfter }).lines,
        want,
        `${run.name} ${loopCheckAfter}`,
      );
    }
  }
});
