/**
 * EventDecoder.skipWithoutIp (Linux perf's resync passing TNTs and compressed TIPs by,
 * see BlockDecoder.perfResync): from wherever an event the flow decoder passes that way
 * was just returned, skipping and then reading on must leave the decoder where reading
 * event by event does: as many events passed, the last one's time, and every event
 * after them the same, times and IPs included, to the same end.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import type { DecoderConfig } from "../../src/event/config.js";
import { EventDecoder } from "../../src/event/decoder.js";
import { EventType, PtEvent } from "../../src/event/types.js";
import { coherentStream, mutatedStream } from "./arbitraries.js";
import { config, describe, Trace } from "./helpers.js";

/** An event perf's decoder without an IP passes by (the flow decoder skips from one). */
function passedBy(ev: PtEvent): boolean {
  return ev.type === EventType.Tnt || (ev.type === EventType.Tip && !ev.ipSuppressed && !(ev.fullIps & 1));
}

/** An event as the comparison sees it: what it says, its time, whether its IP came whole. */
function seen(ev: PtEvent): string {
  return `${describe(ev)} t=${ev.hasTsc ? `${ev.tscHi}:${ev.tscLo}` : "-"} seq=${ev.timingSeq} full=${ev.fullIps}`;
}

interface Rest {
  /** Events passed by, and the last one's time. */
  passed: number;
  lastTime: string;
  /** The events after them, to the end (or the first error, its code last). */
  after: string[];
}

/** Events skipWithoutIp went past, over all checks (the checks are not vacuous). */
let skipped = 0;

/**
 * Read on from `dec`: the events passed by, then the rest. With `skip`, as the flow
 * decoder does: skipWithoutIp before each read while events are passed by; else event
 * by event.
 */
function readOn(dec: EventDecoder, skip: boolean): Rest {
  const ev = new PtEvent();
  const stamp = new PtEvent();
  let passed = 0;
  let lastTime = "";
  const after: string[] = [];
  for (let n = 0; n < 5000; n++) {
    const k = skip && after.length === 0 ? dec.skipWithoutIp(stamp) : 0;
    if (k > 0) {
      skipped += k;
      passed += k;
      lastTime = seen(stamp).replace(/^.* t=/, "t=");
    }
    const status = dec.next(ev);
    if (status < 0) {
      after.push(`error ${status}`);
      break;
    }
    if (after.length === 0 && passedBy(ev)) {
      passed++;
      lastTime = seen(ev).replace(/^.* t=/, "t=");
    } else after.push(seen(ev));
  }
  return { passed, lastTime, after };
}

/** Check every point of `bytes` where an event perf passes by was returned (up to `most`): the number of such points. */
function checkStream(bytes: Uint8Array, cfg: DecoderConfig, most = 40): number {
  const dec = new EventDecoder(bytes, cfg);
  if (dec.syncForward() < 0) return 0;
  const ev = new PtEvent();
  let points = 0;
  for (let n = 0; n < 5000 && points < most; n++) {
    if (dec.next(ev) < 0) break;
    if (!passedBy(ev)) continue;
    points++;
    const expected = readOn(dec.clone(), false);
    const actual = readOn(dec.clone(), true);
    assert.deepEqual(actual, expected, `after event ${n} (${seen(ev)})`);
  }
  return points;
}

/**
 * Streams of what perf's resync passes by most: long runs of TNTs, TIPs near the last
 * IP (compressed) and timing packets, now and then a TIP far away (its IP whole), an
 * interrupt (FUP and TIP), tracing off and on, a PSB+.
 */
const runStream: fc.Arbitrary<Uint8Array> = fc
  .array(fc.tuple(fc.integer({ min: 0, max: 99 }), fc.nat()), { minLength: 20, maxLength: 400 })
  .map((steps) => {
    const base = 0x7f12_3456_0000n;
    const far = 0xffff_ffff_8100_0000n;
    const near = (r: number) => base + BigInt(r % 0x100000);
    const t = new Trace().psb().mode(64).tsc(0x10000n).cbr(40).fup(base).psbend();
    let on = true;
    for (const [k, r] of steps) {
      if (!on) {
        if (k < 50) t.cyc(1 + (r % 200));
        else {
          t.pge(near(r));
          on = true;
        }
      } else if (k < 40) t.tnt([...(r % 0x3f).toString(2).padStart(1 + (r % 6), "0")].join(""));
      else if (k < 58) t.tip(near(r));
      else if (k < 62) t.tip(r % 2 === 0 ? far + BigInt(r % 0x10000) : near(r));
      else if (k < 78) t.cyc(1 + (r % 500));
      else if (k < 86) t.mtc(r & 0xff);
      else if (k < 89) t.tsc(0x10000n + BigInt(r));
      else if (k < 92) t.fup(near(r)).tip(near(r >> 3));
      else if (k < 94) {
        t.pgd(near(r));
        on = false;
      } else if (k < 96)
        t.psb()
          .tsc(0x20000n + BigInt(r))
          .fup(near(r))
          .psbend();
      else if (k < 98) t.pad();
      else t.tip(undefined);
    }
    return t.bytes();
  });

const PERF = config({ perfClock: true, mtcFreq: 3, nomFreq: 40, cpuid15Eax: 2, cpuid15Ebx: 100 });

/** Check `runs` streams of `streams`: at least `points` points, and `skips` events skipped, in all. */
function checkStreams(streams: fc.Arbitrary<Uint8Array>, runs: number, points: number, skips: number): void {
  let checked = 0;
  skipped = 0;
  fc.assert(
    fc.property(streams, (bytes) => {
      checked += checkStream(bytes, PERF);
    }),
    { numRuns: runs },
  );
  assert.ok(checked > points && skipped > skips, `only ${checked} points checked, ${skipped} events skipped`);
}

test("skipWithoutIp: coherent streams read on as event by event", () => {
  checkStreams(coherentStream, 300, 300, 50);
});

test("skipWithoutIp: long runs of TNTs, compressed TIPs and timing read on as event by event", () => {
  checkStreams(runStream, 150, 1000, 5000);
});

test("skipWithoutIp: corrupted streams read on as event by event", () => {
  checkStreams(mutatedStream, 200, 0, -1);
});

test("skipWithoutIp: nothing is skipped without perf's clock", () => {
  fc.assert(
    fc.property(coherentStream, (bytes) => {
      const dec = new EventDecoder(bytes, config());
      if (dec.syncForward() < 0) return;
      const ev = new PtEvent();
      for (let n = 0; n < 200; n++) {
        assert.equal(dec.skipWithoutIp(new PtEvent()), 0);
        if (dec.next(ev) < 0) break;
      }
    }),
    { numRuns: 30 },
  );
});
