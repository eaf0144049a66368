/**
 * BlockDecoder.nextRun (blocks in runs, counted: `ptkit flow --quiet --stat`) decodes
 * what next() called block by block does: the same blocks and instructions, the same
 * statuses between runs (events, errors, the end), the same last block of each run
 * (every field), the same events and trace offsets after it. Generated programs with
 * interrupts and wild returns (events and errors on the way), blocks ending at calls
 * or not, and a loop guard that cuts blocks early (its count starts over between the
 * blocks a run's cache walk goes on through).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { defaultDecoderConfig, PtEvent, Status } from "../../src/event/index.js";
import { Block, BlockDecoder, BlockTally } from "../../src/flow/index.js";
import type { Image } from "../../src/image/index.js";
import { ErrorCode } from "../../src/packet/index.js";
import { generate } from "../../src/unit/gen/index.js";
import { BRANCHES, msrs } from "../unit/gen/helpers.js";
import { programImage, randomProgram, randomRun } from "../unit/gen/random-program.js";

/**
 * What a decode saw: statuses other than 0 in order, each with the block before it and
 * the trace offset after it; the events; blocks and instructions.
 */
interface Seen {
  statuses: string[];
  events: string[];
  blocks: number;
  insns: number;
}

function blockFields(b: Block): string {
  return [b.ip, b.endIp, b.ninsn, b.isid, b.mode, b.iclass, b.speculative, b.truncated, b.size, b.lastSize]
    .map(String)
    .join(" ");
}

/**
 * Decode the whole trace as ptkit flow does (events, then blocks; resync after an
 * error), taking blocks one at a time or in runs.
 */
function decodeAll(
  trace: Uint8Array,
  image: Image,
  endOnCall: boolean,
  loopCheckAfter: number | undefined,
  runs: boolean,
): Seen {
  const config = { ...defaultDecoderConfig(), endOnCall };
  const dec = new BlockDecoder(trace, { image, config, loopCheckAfter });
  const block = new Block();
  const ev = new PtEvent();
  const tally = new BlockTally();
  const seen: Seen = { statuses: [], events: [], blocks: 0, insns: 0 };
  let status = dec.syncForward();
  for (let steps = 0; steps < 1_000_000; steps++) {
    if (status < 0) {
      seen.statuses.push(`${status} at ${dec.offset}`);
      if (status === -ErrorCode.Eos) break;
      status = dec.syncForward();
      continue;
    }
    while (status >= 0 && status & Status.EventPending) {
      status = dec.event(ev);
      seen.events.push(`${ev.type} ${ev.ip} ${status} at ${dec.offset}`);
    }
    if (status < 0) continue;
    if (status & Status.Eos) break;
    if (runs) {
      status = dec.nextRun(block, tally);
    } else {
      status = dec.next(block);
      seen.blocks += 1;
      seen.insns += block.ninsn;
    }
    if (status !== 0)
      seen.statuses.push(
        `${status} after ${blockFields(block)} (${dec.lastInsnSize(block)}) at ${dec.offset}`,
      );
  }
  if (runs) {
    seen.blocks = tally.blocks;
    seen.insns = tally.insns;
  }
  return seen;
}

/**
 * Decode program `seed`'s run block by block and in runs, with its code mapped up to
 * `mapped` bytes (all of it by default): the same everything. Where the tail is left
 * out, branches lead where no section is (errors between runs), and a run's cache walk
 * must leave the section it was in as the decoder's for those.
 */
function sameInRuns(
  seed: number,
  endOnCall: boolean,
  loopCheckAfter: number | undefined,
  mapped?: number,
): void {
  const program = randomProgram(seed, 80);
  const exec = randomRun(program, seed, { insns: 20000, interrupts: 0.01, wildReturns: 0.02 });
  const trace = generate(exec, {
    msrs: msrs({ preset: "skylake", caps: { ptwrite: true }, ctl: BRANCHES }),
  });
  const image = programImage({ ...program, code: program.code.subarray(0, mapped) });
  const one = decodeAll(trace.bytes, image, endOnCall, loopCheckAfter, false);
  const runs = decodeAll(trace.bytes, image, endOnCall, loopCheckAfter, true);
  if (mapped === undefined) assert.ok(one.insns >= 20000, `${one.insns} instructions`);
  else
    assert.ok(
      one.statuses.some((s) => s.startsWith(`${-ErrorCode.NoMap} `)),
      "branches where nothing is mapped",
    );
  assert.ok(one.statuses.length > 2, "events and the end between runs");
  assert.deepEqual(runs, one);
}

for (const seed of [3, 4]) {
  for (const [endOnCall, loopCheckAfter] of [
    [false, undefined],
    [true, undefined],
    [true, 4],
  ] as const) {
    const named = `${endOnCall ? ", blocks end at calls" : ""}${loopCheckAfter ? `, loop check after ${loopCheckAfter}` : ""}`;
    test(`program ${seed}${named}: runs decode the same blocks`, () => {
      sameInRuns(seed, endOnCall, loopCheckAfter);
    });
  }
  test(`program ${seed}, the last third of its code not mapped: runs decode the same blocks and errors`, () => {
    sameInRuns(seed, false, undefined, Math.floor((randomProgram(seed, 80).code.length * 2) / 3));
  });
}
