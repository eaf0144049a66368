/**
 * Synchronisation, positions, errors and resynchronisation, buffer bounds, and
 * decoder copies.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ErrorCode } from "../../src/base/errors.js";
import { EventDecoder } from "../../src/event/decoder.js";
import { PtEvent } from "../../src/event/types.js";
import { config, describe, Trace } from "./helpers.js";

function drain(dec: EventDecoder, max = 1000): { events: string[]; status: number } {
  const ev = new PtEvent();
  const events: string[] = [];
  let status = 0;
  while (events.length < max) {
    status = dec.next(ev);
    if (status < 0) break;
    events.push(describe(ev));
  }
  return { events, status };
}

test("before synchronisation: -NoSync everywhere", () => {
  const dec = new EventDecoder(new Trace().psb().psbend().bytes(), config());
  assert.equal(dec.next(new PtEvent()), -ErrorCode.NoSync);
  assert.equal(dec.offset, -ErrorCode.NoSync);
  assert.equal(dec.syncOffset, -ErrorCode.NoSync);
  assert.equal(dec.pos, -1);
});

test("syncForward skips to the first PSB; without one it is -Eos", () => {
  const t = new Trace().raw(0x99, 0x02, 0x82, 0x55).tnt("!");
  const psbAt = t.length;
  t.psb().fup(0x1000n).psbend().tnt(".");
  const dec = new EventDecoder(t.bytes(), config());
  assert.equal(dec.syncForward(), 0);
  assert.equal(dec.syncOffset, psbAt);
  // The next event comes from the PSBEND.
  assert.equal(dec.offset, t.length - 1 - 2);
  assert.deepEqual(drain(dec), { events: ["enabled 0x1000 [status]", "tnt ."], status: -ErrorCode.Eos });
  assert.equal(new EventDecoder(new Trace().tnt("!!").bytes(), config()).syncForward(), -ErrorCode.Eos);
});

test("a decode error is reported at its offset, repeats, and syncForward resumes at the next PSB", () => {
  const t = new Trace().psb().fup(0x1000n).psbend().tnt("!");
  const badAt = t.length;
  t.raw(0x02, 0xff).tnt(".");
  const psb2 = t.length;
  t.psb().fup(0x2000n).psbend().tnt("!!");
  const dec = new EventDecoder(t.bytes(), config());
  dec.syncForward();
  assert.deepEqual(drain(dec), {
    events: ["enabled 0x1000 [status]", "tnt !"],
    status: -ErrorCode.BadOpcode,
  });
  assert.equal(dec.offset, badAt);
  assert.equal(dec.next(new PtEvent()), -ErrorCode.BadOpcode);
  assert.equal(dec.syncForward(), 0);
  assert.equal(dec.syncOffset, psb2);
  assert.deepEqual(drain(dec), { events: ["enabled 0x2000 [status]", "tnt !!"], status: -ErrorCode.Eos });
});

test("syncBackward visits PSBs from the end towards the start", () => {
  const t = new Trace();
  const psbs: number[] = [];
  for (const ip of [0x1000n, 0x2000n, 0x3000n]) {
    psbs.push(t.length);
    t.psb().fup(ip).psbend().tnt("!.");
  }
  const dec = new EventDecoder(t.bytes(), config());
  const seen: Array<[number, string]> = [];
  for (;;) {
    const status = dec.syncBackward();
    if (status < 0) {
      assert.equal(status, -ErrorCode.Eos);
      break;
    }
    const ev = new PtEvent();
    assert.equal(dec.next(ev), 0);
    seen.push([dec.syncOffset, describe(ev)]);
  }
  assert.deepEqual(seen, [
    [psbs[2]!, "enabled 0x3000 [status]"],
    [psbs[1]!, "enabled 0x2000 [status]"],
    [psbs[0]!, "enabled 0x1000 [status]"],
  ]);
});

test("syncSet: a PSB at the offset, -NoSync elsewhere, -Eos outside the trace", () => {
  const t = new Trace().psb().fup(0x1000n).psbend().tnt("!");
  const psb2 = t.length;
  t.psb().fup(0x2000n).psbend();
  const dec = new EventDecoder(t.bytes(), config());
  assert.equal(dec.syncSet(psb2), 0);
  assert.deepEqual(drain(dec).events, ["enabled 0x2000 [status]"]);
  assert.equal(dec.syncSet(3), -ErrorCode.NoSync);
  assert.equal(dec.syncSet(t.length + 1), -ErrorCode.Eos);
  assert.equal(dec.syncSet(Number.NaN), -ErrorCode.Invalid);
  assert.equal(dec.syncSet(1.5), -ErrorCode.Invalid);
  assert.equal(dec.syncSet(0), 0);
  assert.equal(drain(dec).events.length, 3);
});

test("begin and end select a part of the buffer; offsets are relative to begin", () => {
  const t = new Trace().tnt("!!!").pad();
  const begin = t.length;
  t.psb().fup(0x1000n).psbend().tnt("!");
  const end = t.length;
  t.tnt(".");
  const dec = new EventDecoder(t.bytes(), config(), { begin, end });
  assert.equal(dec.syncForward(), 0);
  assert.equal(dec.syncOffset, 0);
  assert.deepEqual(drain(dec), { events: ["enabled 0x1000 [status]", "tnt !"], status: -ErrorCode.Eos });
});

test("a trace cut inside a packet ends with -Eos at the cut packet", () => {
  const t = new Trace().psb().fup(0x1000n).psbend().tnt("!");
  const cut = t.length;
  t.tip(0x7fff00001234n);
  const dec = new EventDecoder(t.bytes(), config(), { end: cut + 3 });
  dec.syncForward();
  assert.deepEqual(drain(dec), { events: ["enabled 0x1000 [status]", "tnt !"], status: -ErrorCode.Eos });
  assert.equal(dec.offset, cut);
});

test("a copy reads ahead without moving the original; copyFrom goes back", () => {
  const t = new Trace().psb().fup(0x1000n).psbend().tnt("!").fup(0x1010n).tip(0x2000n).tnt("..");
  const dec = new EventDecoder(t.bytes(), config());
  dec.syncForward();
  const ev = new PtEvent();
  dec.next(ev);
  dec.next(ev);
  const pos = dec.pos;
  const copy = dec.clone();
  assert.deepEqual(drain(copy).events, ["async-branch 0x1010->0x2000", "tnt .."]);
  assert.equal(dec.pos, pos);
  const saved = dec.clone();
  assert.deepEqual(drain(dec).events, ["async-branch 0x1010->0x2000", "tnt .."]);
  dec.copyFrom(saved);
  assert.equal(dec.pos, pos);
  assert.deepEqual(drain(dec).events, ["async-branch 0x1010->0x2000", "tnt .."]);
});

test("the time getter follows the packets decoded so far", () => {
  const t = new Trace().psb().fup(0x1000n).tsc(0x77n).psbend().tnt("!");
  const dec = new EventDecoder(t.bytes(), config());
  dec.syncForward();
  assert.equal(dec.time.queryCbr(), -ErrorCode.NoCbr);
  drain(dec);
  const q = { tscHi: 0, tscLo: 0, lostMtc: 0, lostCyc: 0, tscBig: 0n };
  assert.equal(dec.time.queryTsc(q), 0);
  assert.equal(q.tscLo, 0x77);
});
