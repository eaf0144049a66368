/**
 * BlockDecoder.lastInsnSize: where the decoder has the length of a block's last
 * instruction (its decode cache), it is the length the instruction decodes to; it
 * has it for most blocks that end at a conditional branch (ptkit perf takes not-taken
 * branches from it). BlockDecoder.decodedInsn likewise for every instruction of the
 * block: length, class and where execution goes on as decoding says, known for most
 * (the analysis walks new blocks with it). Block.lastClass and
 * BlockDecoder.lastInsnDecoded likewise for the block's last instruction's class (and
 * size), known for most blocks that end at a call or jump (ptkit perf's branch times ask
 * whether it is a direct one). Kernel-traced generated programs, blocks ending at calls
 * or not.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { defaultDecoderConfig, EventType, PtEvent, Status } from "../../src/event/index.js";
import { Block, BlockDecoder, FlowClass } from "../../src/flow/index.js";
import type { Image } from "../../src/image/index.js";
import { ErrorCode } from "../../src/packet/index.js";
import { CodeWalker } from "../../src/session/flow-walk.js";
import { generate } from "../../src/unit/gen/index.js";
import { BRANCHES, msrs } from "../unit/gen/helpers.js";
import { programImage, randomProgram, randomRun } from "../unit/gen/random-program.js";

describe("BlockDecoder.lastInsnSize", () => {
  for (const seed of [1, 2]) {
    for (const endOnCall of [false, true]) {
      test(`program ${seed}${endOnCall ? ", blocks end at calls" : ""}`, () => {
        const program = randomProgram(seed, 80);
        const exec = randomRun(program, seed, { insns: 20000, interrupts: 0.01, wildReturns: 0.02 });
        const trace = generate(exec, {
          msrs: msrs({ preset: "skylake", caps: { ptwrite: true }, ctl: BRANCHES }),
        });
        const image = programImage(program);
        const dec = new BlockDecoder(trace.bytes, {
          image,
          config: { ...defaultDecoderConfig(), endOnCall },
        });
        const block = new Block();
        const ev = new PtEvent();
        const walker = new CodeWalker();
        walker.use(image);
        let known = 0;
        let conds = 0;
        let condsKnown = 0;
        let insns = 0;
        let decodedKnown = 0;
        const classes = { callsJumps: 0, known: 0 };
        for (let status = dec.syncForward(); ; ) {
          if (status < 0) {
            assert.equal(status, -ErrorCode.Eos, "no decode errors");
            break;
          }
          while (status >= 0 && status & Status.EventPending) {
            status = dec.event(ev);
            assert.notEqual(ev.type, EventType.Overflow);
          }
          if (status < 0) continue;
          if (status & Status.Eos) break;
          status = dec.next(block);
          insns += block.ninsn;
          if (block.ninsn === 0) continue;
          decodedKnown += checkDecodedInsns(dec, block, image, walker);
          const size = dec.lastInsnSize(block);
          checkLastClass(dec, block, image, walker, classes);
          if (block.iclass === FlowClass.CondJump) conds++;
          if (size === 0) continue;
          known++;
          if (block.iclass === FlowClass.CondJump) condsKnown++;
          assert.equal(walker.fetchInBlock(block, image, block.endIpHi, block.endIpLo), 0);
          const want = walker.decode(block.endIpHi, block.endIpLo, block.mode);
          assert.equal(size, want, `the block ending at ${block.endIp.toString(16)}`);
        }
        assert.ok(insns >= 20000, `${insns} instructions decoded`);
        assert.ok(known > 0);
        assert.ok(condsKnown > conds / 2, `${condsKnown} of ${conds} conditional branches`);
        assert.ok(decodedKnown > insns / 2, `decodedInsn knew ${decodedKnown} of ${insns} instructions`);
        assert.ok(
          classes.known > classes.callsJumps / 2,
          `Block.lastClass knew ${classes.known} of ${classes.callsJumps} calls and jumps`,
        );
      });
    }
  }
});

/**
 * The class the block decoder gives the block's last instruction (Block.lastClass), and
 * the size and class its decode cache has for it (lastInsnDecoded), where it has them:
 * what decoding it gives (ptkit perf's branch times ask whether a call or jump is direct).
 */
function checkLastClass(
  dec: BlockDecoder,
  block: Block,
  image: Image,
  walker: CodeWalker,
  classes: { callsJumps: number; known: number },
): void {
  const cls = block.lastClass;
  const decoded = dec.lastInsnDecoded(block);
  const decodedClass = dec.decodedClass;
  if (block.iclass === FlowClass.Call || block.iclass === FlowClass.Jump) {
    classes.callsJumps++;
    if (cls >= 0) classes.known++;
  }
  if (cls < 0 && decoded === 0) return;
  const at = `the block ending at ${block.endIp.toString(16)}`;
  assert.equal(walker.fetchInBlock(block, image, block.endIpHi, block.endIpLo), 0);
  const size = walker.decode(block.endIpHi, block.endIpLo, block.mode);
  if (cls >= 0) assert.equal(cls, walker.info.iclass, at);
  if (decoded > 0) {
    assert.equal(decoded, size, at);
    assert.equal(decodedClass, walker.info.iclass, at);
  }
}

/** Walk the block's instructions, checking each that decodedInsn knows against decoding it: how many it knew. */
function checkDecodedInsns(dec: BlockDecoder, block: Block, image: Image, walker: CodeWalker): number {
  let known = 0;
  let hi = block.ipHi;
  let lo = block.ipLo;
  for (let n = block.ninsn; n > 0; n--) {
    const size = dec.decodedInsn(hi, lo, block.mode);
    assert.equal(walker.fetchInBlock(block, image, hi, lo), 0);
    const want = walker.decode(hi, lo, block.mode);
    if (size !== 0) {
      known++;
      const at = `0x${((BigInt(hi) << 32n) | BigInt(lo)).toString(16)}`;
      assert.equal(size, want, at);
      assert.equal(dec.decodedClass, walker.info.iclass, at);
      // Inside the block execution goes on where decoding says (the last instruction may branch).
      if (n > 1) {
        const next = (BigInt(hi) << 32n) + BigInt(lo) + BigInt(dec.decodedStep);
        assert.equal(next, (BigInt(walker.next.hi) << 32n) | BigInt(walker.next.lo), at);
      }
    }
    hi = walker.next.hi;
    lo = walker.next.lo;
  }
  return known;
}
