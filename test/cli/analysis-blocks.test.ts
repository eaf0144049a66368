/**
 * The block replay of `ptkit flow`'s analysis (BlockInsns): call stacks fed from
 * blocks in runs (call stacks alone) are the ones fed instruction by instruction
 * (with coverage on) and the ones of the instruction decoder, on a program with more
 * distinct blocks than the replay's tables start with, direct calls inside blocks,
 * indirect calls ending blocks and compressed returns.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { CallAnalysis, type CallSink, Coverage, type FlowTracker } from "../../src/analysis/index.js";
import { defaultDecoderConfig, PtEvent, Status } from "../../src/event/index.js";
import { Block, BlockDecoder } from "../../src/flow/index.js";
import type { Image } from "../../src/image/index.js";
import { ErrorCode, errorMessage } from "../../src/packet/index.js";
import { BlockInsns } from "../../src/session/analysis-blocks.js";
import { CodeWalker } from "../../src/session/flow-walk.js";
import { feedTrace } from "../analysis/export-trace.js";
import { Trace } from "../event/helpers.js";
import { Asm } from "../flow/asm.js";

/** Leaf functions called by main: each is a distinct block or two (well over 1024 in all). */
const FUNCTIONS = 1500;

/** Times main runs its calls (a block is walked the first time, replayed after). */
const ROUNDS = 3;

/**
 * main calls f0..f1499 in turn, ROUNDS times (a conditional jump back), and halts; f_i
 * is `nop; ret`, or calls g (`add; ret`) in between: directly when i % 3 == 0,
 * indirectly when i % 5 == 0.
 */
function manyCalls(): { image: Image; trace: Uint8Array; calls: number } {
  const a = new Asm(0x401000n);
  a.label("main");
  for (let i = 0; i < FUNCTIONS; i++) a.call(`f${i}`);
  a.jz("main");
  a.label("end").hlt();
  a.label("g").add().ret();
  let calls = 0;
  for (let i = 0; i < FUNCTIONS; i++) {
    a.label(`f${i}`).nop();
    if (i % 5 === 0) a.callInd();
    else if (i % 3 === 0) a.call("g");
    calls += i % 5 === 0 || i % 3 === 0 ? 2 : 1;
    a.ret();
  }
  const t = new Trace().psb().tsc(0x100000n).mode(64).fup(a.at("main")).psbend();
  let bits = "";
  const flush = () => {
    for (; bits.length > 0; bits = bits.slice(6)) t.tnt(bits.slice(0, 6));
  };
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < FUNCTIONS; i++) {
      if (i % 5 === 0) {
        flush();
        t.tip(a.at("g"));
      }
      // g's return, then f_i's (compressed returns: one taken bit each).
      bits += i % 5 === 0 || i % 3 === 0 ? "!!" : "!";
      if (i % 100 === 99) {
        flush();
        t.tsc(0x100000n + BigInt(round * FUNCTIONS + i) * 0x40n);
      }
    }
    // jz main: taken but the last time.
    bits += round < ROUNDS - 1 ? "!" : ".";
  }
  flush();
  t.fup(a.at("end")).pgd();
  return { image: a.image(), trace: t.bytes(), calls: ROUNDS * calls };
}

/** Every frame entry, exit and marker a sink gets, as text. */
function recorder(log: string[]): CallSink {
  return {
    begin: () => {},
    resume: () => {},
    suspend: () => {},
    finish: () => {},
    enter: (_t, depth, kind, hi, lo, time, icount) =>
      log.push(`enter ${depth} ${kind} ${hi}:${lo} ${time} ${icount}`),
    exit: (_t, depth, end, time, icount) => log.push(`exit ${depth} ${end} ${time} ${icount}`),
    marker: (_t, what, offset, _m, time, icount) => log.push(`marker ${what} ${offset} ${time} ${icount}`),
  };
}

/** Decode with the block decoder as `ptkit flow` does, blocks replayed through BlockInsns. */
function feedBlocks(trace: Uint8Array, image: Image, feed: FlowTracker): void {
  const config = { ...defaultDecoderConfig(), enableTickEvents: true };
  const dec = new BlockDecoder(trace, { image, config });
  const blocks = new BlockInsns(new CodeWalker());
  const block = new Block();
  const ev = new PtEvent();
  let status = dec.syncForward();
  while (status !== -ErrorCode.Eos) {
    if (status < 0) {
      feed.error(dec.offset, errorMessage(status));
      status = dec.syncForward();
      continue;
    }
    while (status >= 0 && status & Status.EventPending) {
      status = dec.event(ev);
      if (status >= 0) feed.event(ev);
    }
    if (status < 0) continue;
    if (status & Status.Eos) break;
    status = dec.next(block);
    if (block.ninsn > 0) blocks.feed(block, dec.image, feed);
  }
}

function frames(
  how: (trace: Uint8Array, image: Image, feed: FlowTracker) => void,
  coverage: boolean,
): { log: string[]; everyInsn: boolean; transfers: boolean; icount: number } {
  const { image, trace } = manyCalls();
  const log: string[] = [];
  const analysis = new CallAnalysis({
    sinks: [recorder(log)],
    nsPerTick: 0.5,
    ...(coverage ? { coverage: new Coverage() } : {}),
  });
  const feed = analysis.stream("t");
  how(trace, image, feed);
  analysis.finish();
  return { log, everyInsn: feed.everyInsn, transfers: feed.transfers, icount: feed.icount };
}

test("call stacks from blocks in runs match those fed instruction by instruction", () => {
  const runs = frames(feedBlocks, false);
  const each = frames(feedBlocks, true);
  const insns = frames(feedTrace, false);
  // Call stacks alone: runs between the movers; with coverage: runs between the transfers.
  assert.equal(runs.everyInsn, false);
  assert.equal(runs.transfers, false);
  assert.equal(each.everyInsn, false);
  assert.equal(each.transfers, true);
  // A call frame per call (the root is main, the disable at the end an interrupt frame
  // with an unknown entry); every frame exits.
  const { calls } = manyCalls();
  assert.equal(runs.log.filter((l) => /^enter \d+ 0 /.test(l)).length, calls);
  const enters = runs.log.filter((l) => l.startsWith("enter")).length;
  assert.equal(enters, calls + 2);
  assert.equal(runs.log.filter((l) => l.startsWith("exit")).length, enters);
  assert.ok(runs.log.some((l) => l.startsWith("enter 3 0 ")));
  assert.equal(runs.icount, each.icount);
  assert.deepEqual(runs.log, each.log);
  assert.deepEqual(runs.log, insns.log);
});
