/**
 * Hostile input: random bytes and mutated event streams never make the decoder throw
 * or hang, every event it reports is well-formed, the work per byte is bounded, and
 * decoding is deterministic (a copy taken anywhere continues exactly like the original).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { ErrorCode } from "../../src/base/errors.js";
import { type DecoderConfig, defaultDecoderConfig } from "../../src/event/config.js";
import { EventDecoder } from "../../src/event/decoder.js";
import { EVENT_TYPE_COUNT, EventType, PtEvent } from "../../src/event/types.js";
import { hostileBytes } from "../packet/hostile.js";
import { anyConfig, coherentStream, mutatedStream } from "./arbitraries.js";
import { describe } from "./helpers.js";

const RUNS = 1500;

/** At most this many events per byte: a packet's own plus a full event queue. */
const EVENTS_PER_BYTE = 16;

const STATUS_TYPES = new Set<number>([
  EventType.Enabled,
  EventType.Disabled,
  EventType.ExecMode,
  EventType.Iflags,
  EventType.Tsx,
  EventType.AsyncPaging,
  EventType.AsyncVmcs,
  EventType.Cbr,
]);

const U32_FIELDS = [
  "tscHi",
  "tscLo",
  "lostMtc",
  "lostCyc",
  "ipHi",
  "ipLo",
  "fromHi",
  "fromLo",
  "payloadHi",
  "payloadLo",
  "payload2Hi",
  "payload2Lo",
  "flags",
  "mode",
  "size",
  "vector",
  "hints",
  "ext",
  "state",
  "subState",
  "last",
  "deepest",
  "ratio",
  "trbv",
  "icnt",
] as const;

function assertWellFormed(ev: PtEvent): void {
  assert.ok(Number.isInteger(ev.type) && ev.type >= 0 && ev.type < EVENT_TYPE_COUNT, `type ${ev.type}`);
  assert.notEqual(ev.type, EventType.Tick, "the event decoder reports no ticks");
  for (const f of U32_FIELDS) {
    const v = ev[f];
    assert.ok(Number.isInteger(v) && v >= 0 && v <= 0xffffffff, `${f} = ${v}`);
  }
  if (ev.ipSuppressed) assert.ok(ev.ipHi === 0 && ev.ipLo === 0, "a suppressed IP is 0");
  if (ev.statusUpdate) assert.ok(STATUS_TYPES.has(ev.type), `status update of ${describe(ev)}`);
  if (ev.type === EventType.Tnt) assert.ok(ev.size >= 1 && ev.size <= 47, `tnt size ${ev.size}`);
  if (ev.type === EventType.Ptwrite) assert.ok(ev.size === 4 || ev.size === 8);
  if (ev.type === EventType.ExecMode) assert.ok(ev.mode <= 3);
}

/** Decode everything, resynchronising after errors like ptxed does; returns a transcript. */
function decodeAll(buf: Uint8Array, cfg: DecoderConfig): string[] {
  const dec = new EventDecoder(buf, cfg);
  const ev = new PtEvent();
  const out: string[] = [];
  const budget = EVENTS_PER_BYTE * (buf.length + 1);
  let calls = 0;
  let status = dec.syncForward();
  let lastSync = -1;
  while (status !== -ErrorCode.Eos || calls === 0) {
    if (status < 0) {
      // -Internal means a bug in ptkit: hostile bytes get a decode error like any other.
      assert.notEqual(status, -ErrorCode.Internal, `internal error at ${dec.offset}`);
      out.push(`error ${status} @${dec.offset}`);
      if (status === -ErrorCode.Eos) break;
      const before = dec.syncOffset;
      status = dec.syncForward();
      if (status < 0) break;
      // Every resynchronisation moves forward.
      assert.ok(dec.syncOffset > before || before < 0, `resync from ${before} to ${dec.syncOffset}`);
      assert.ok(dec.syncOffset > lastSync);
      lastSync = dec.syncOffset;
      continue;
    }
    calls += 1;
    assert.ok(calls <= budget, `more than ${budget} events from ${buf.length} bytes`);
    status = dec.next(ev);
    if (status >= 0) {
      assert.equal(status, 0);
      assertWellFormed(ev);
      const offset = dec.offset;
      assert.ok(offset >= 0 && offset <= buf.length, `offset ${offset}`);
      out.push(describe(ev));
    }
  }
  return out;
}

/** Packet soup and processor-like streams, both with bytes changed and cut. */
const eventStream = fc.oneof(mutatedStream, coherentStream);

test("two asynchronous branches for one TIP are a packet context error, not an internal one", () => {
  // Found by the fuzzer from ptet-uint-uiret: the CFE (UINTR) binds an asynchronous
  // branch to a FUP while the one before it still waits for its TIP.
  const hex =
    "028202820282028202820282028202827d0000100000009905022302130c043d01006d050010000000100000003d0200003d05006d01001000000002130c043d02006d0a001000000002130d006d0100000000003d040001";
  const trace = Uint8Array.from(hex.match(/../g)!, (h) => Number.parseInt(h, 16));
  const out = decodeAll(trace, defaultDecoderConfig());
  assert.ok(
    out.some((l) => l.startsWith(`error ${-ErrorCode.BadContext} `)),
    out.join("\n"),
  );
});

test("random bytes: no throw, no hang, well-formed events", () => {
  fc.assert(
    fc.property(hostileBytes(64), anyConfig, (bytes, cfg) => {
      decodeAll(bytes, cfg);
    }),
    { numRuns: RUNS },
  );
});

test("mutated event streams: no throw, no hang, well-formed events", () => {
  fc.assert(
    fc.property(eventStream, anyConfig, (bytes, cfg) => {
      decodeAll(bytes, cfg);
    }),
    { numRuns: RUNS },
  );
});

test("decoding is deterministic, and a copy taken at any event continues identically", () => {
  fc.assert(
    fc.property(eventStream, anyConfig, fc.nat(40), (bytes, cfg, at) => {
      assert.deepEqual(decodeAll(bytes, cfg), decodeAll(bytes, cfg));
      const dec = new EventDecoder(bytes, cfg);
      if (dec.syncForward() < 0) return;
      const ev = new PtEvent();
      for (let i = 0; i < at; i++) if (dec.next(ev) < 0) return;
      const copy = dec.clone();
      const rest = (d: EventDecoder) => {
        const out: string[] = [];
        for (let i = 0; i < EVENTS_PER_BYTE * (bytes.length + 1); i++) {
          const status = d.next(ev);
          out.push(status < 0 ? `error ${status} @${d.offset}` : describe(ev));
          if (status < 0) break;
        }
        return out;
      };
      assert.deepEqual(rest(copy), rest(dec));
    }),
    { numRuns: RUNS },
  );
});

test("repeated syncBackward over hostile bytes: each success is at an earlier PSB, and it ends", () => {
  fc.assert(
    fc.property(hostileBytes(64), anyConfig, (bytes, cfg) => {
      const dec = new EventDecoder(bytes, cfg);
      let last = Number.POSITIVE_INFINITY;
      const failures = new Set<string>();
      for (let round = 0; ; round++) {
        assert.ok(round <= 2 * bytes.length + 2, "too many rounds");
        const status = dec.syncBackward();
        if (status === -ErrorCode.Eos) break;
        if (status < 0) {
          // A PSB+ that fails to decode is found again from where it failed, as in
          // libipt: callers stop when an error repeats.
          const key = `${status}@${dec.pos}`;
          if (failures.has(key)) break;
          failures.add(key);
          continue;
        }
        const sync = dec.syncOffset;
        assert.ok(sync >= 0 && sync < last, `sync ${sync} after ${last}`);
        last = sync;
      }
    }),
    { numRuns: RUNS },
  );
});
