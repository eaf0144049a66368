/**
 * Where a TIP.PGD with an IP binds: the SDM lets FilterEn (and TraceStop) change only
 * where a taken branch or event lands (§"Filter Enable (FilterEn)", §"TraceStop");
 * leaving the filter region through a direct JMP/CALL, an indirect JMP/CALL or an
 * uncompressed RET gives TIP.PGD(target) (Table "Packet Generation under Different
 * Enable Conditions", cases 6 and 9c). Straight-line code that runs out of the region
 * is still traced, and it may pass through the very IP the disabling branch later
 * goes to: the disable binds to that branch, not to the first time the decoder's IP
 * equals the disable IP.
 *
 * libipt 8978561f does the latter: `pt_blk_proceed_event` places a `ptev_disabled`
 * with IP through `pt_blk_proceed_to_disabled` -> `pt_blk_proceed_to_ip`, which stops
 * as soon as `decoder->ip` equals the IP, however it got there (its instruction
 * decoder is built on the block decoder, so both lose the instructions from that IP
 * to the branch); `pt_blk_proceed_trailing_event` does the same after a postponed
 * instruction ("This might have brought us to the disable IP"). ptkit mirrors it.
 * libipt 2.0.5's instruction decoder (`pt_insn_at_disabled_event`) bound the event
 * to a branch instead, which is why Debian's libipt decodes these traces correctly.
 *
 * ptkit departs from libipt 8978561f here (BlockEvents.proceedToBranchTo and
 * trailingDisabled): it walks to the branch that goes to the IP. The ptxed
 * conformance suite has no trace that tells the two apart. The seeds at the end are
 * the trace-unit generator's end-to-end cases (test/unit/gen) that found this.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Trace } from "../event/helpers.js";
import { generateCase } from "../unit/gen/libipt-case.js";
import { tracedIps } from "../unit/gen/oracle.js";
import { programImage } from "../unit/gen/random-program.js";
import { Asm } from "./asm.js";
import { decodeBoth, hx, runBlocks, runInsns } from "./run.js";

const BASE = 0x1000n;

/** Tracing on at `ip` (PSB+ with FUP), 64-bit code. */
function start(ip: bigint): Trace {
  return new Trace().psb().mode(64).fup(ip).psbend();
}

function at(asm: Asm, ...labels: string[]): string[] {
  return labels.map((l) => hx(asm.at(l)));
}

describe("a TIP.PGD(IP) binds to the branch to IP, not to straight-line code reaching IP", () => {
  test("an indirect jump to itself (case 9c)", () => {
    // The filter region is [l0, l0]; the code runs on out of it into the jump.
    const a = new Asm(BASE).label("l0").nop().label("j").jmpInd().label("x").hlt();
    const trace = start(a.at("l0")).pgd(a.at("j")).bytes();
    assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
      ...at(a, "l0", "j"),
      `[disabled ${hx(a.at("j"))}]`,
    ]);
  });

  test("an uncompressed return to an instruction the code ran through (case 9c)", () => {
    const a = new Asm(BASE).label("l0").nop().label("l1").add().label("r").ret();
    const trace = start(a.at("l0")).pgd(a.at("l1")).bytes();
    assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
      ...at(a, "l0", "l1", "r"),
      `[disabled ${hx(a.at("l1"))}]`,
    ]);
  });

  test("an indirect call back into the code it ran: resumed at the return address", () => {
    const a = new Asm(BASE).label("l0").nop().label("l1").nop().label("c").callInd().label("l3").hlt();
    const trace = start(a.at("l0")).pgd(a.at("l1")).pge(a.at("l3")).fup(a.at("l3")).pgd().bytes();
    assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
      ...at(a, "l0", "l1", "c"),
      `[disabled ${hx(a.at("l1"))}]`,
      `[enabled ${hx(a.at("l3"))} resumed]`,
      `[async-disabled ${hx(a.at("l3"))}->-]`,
    ]);
  });

  test("a direct jump back to an instruction the code ran through (case 6)", () => {
    const a = new Asm(BASE).label("l0").nop().label("l1").add().label("j").jmp8("l1").hlt();
    const trace = start(a.at("l0")).pgd(a.at("l1")).bytes();
    assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
      ...at(a, "l0", "l1", "j"),
      `[disabled ${hx(a.at("l1"))}]`,
    ]);
  });

  test("a taken Jcc with the target in the TIP.PGD (as libipt's tests write it)", () => {
    const a = new Asm(BASE).label("l0").nop().label("l1").add().label("jz").jz8("l1").hlt();
    const trace = start(a.at("l0")).pgd(a.at("l1")).bytes();
    assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
      ...at(a, "l0", "l1", "jz"),
      `[disabled ${hx(a.at("l1"))}]`,
    ]);
  });

  test("after a reported PTWRITE, the next instruction is not where it binds", () => {
    const a = new Asm(BASE).label("l0").ptwrite().label("l1").nop().label("j").jmpInd().hlt();
    const trace = start(a.at("l0")).ptw(0x2an, 4, false).pgd(a.at("l1")).bytes();
    assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
      ...at(a, "l0"),
      "[ptwrite 0x2a/4 -]",
      ...at(a, "l1", "j"),
      `[disabled ${hx(a.at("l1"))}]`,
    ]);
  });
});

describe("what the fix must keep", () => {
  test("a direct jump to the TIP.PGD's IP: disabled at its target", () => {
    const a = new Asm(BASE).label("l0").nop().label("j").jmp("out").hlt().label("out").nop().jmpInd();
    const trace = start(a.at("l0")).pgd(a.at("out")).bytes();
    assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
      ...at(a, "l0", "j"),
      `[disabled ${hx(a.at("out"))}]`,
    ]);
  });

  test("a direct call on the way to another IP is walked through", () => {
    const a = new Asm(BASE).label("l0").call("f").label("l1").hlt().label("f").nop().label("r").jmpInd();
    const trace = start(a.at("l0")).pgd(a.at("l1")).bytes();
    assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
      ...at(a, "l0", "f", "r"),
      `[disabled ${hx(a.at("l1"))}]`,
    ]);
  });

  test("an indirect jump to an IP off the straight-line path", () => {
    const a = new Asm(BASE).label("l0").nop().label("j").jmpInd().label("x").hlt();
    const trace = start(a.at("l0")).pgd(0x5000n).bytes();
    assert.deepEqual(decodeBoth(trace, { image: a.image() }), [...at(a, "l0", "j"), "[disabled 0x5000]"]);
  });
});

/** The generator's end-to-end seeds (test/unit/gen/libipt.test.ts) that found this. */
const SEEDS = [98, 123, 132, 156, 176, 181, 278, 472, 552, 668, 807];

describe("generated traces with tiny IP filter ranges decode to the traced instructions", () => {
  for (const seed of SEEDS) {
    test(`seed ${seed}`, () => {
      const { program, exec, c, res } = generateCase(seed);
      assert.equal(c.ctl.ADDR0_CFG, 1, "an IP filter range");
      assert.equal(res.overflows, 0);
      const image = programImage(program);
      const want = tracedIps(exec, c.filter);
      const hex = (ips: bigint[]) => ips.map(hx);
      assert.deepEqual(hex(runInsns(res.bytes, { image }).ips), want, "instruction decoder");
      assert.deepEqual(hex(runBlocks(res.bytes, { image }).ips), want, "block decoder");
    });
  }
});
