/**
 * SameCodeCaches (src/flow/code-reader.ts): sections of different images that hold the
 * same bytes at the same address share their decode and block caches (ptkit perf's
 * streams, one per CPU, each map the process's files in images of their own); a
 * different address, part of the file or buffer, or zero fill does not. Decoders that
 * share them decode the instructions decoders with caches of their own do.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { defaultDecoderConfig, PtEvent, Status } from "../../src/event/index.js";
import { Block, BlockDecoder, SameCodeCaches } from "../../src/flow/index.js";
import { SectionCache } from "../../src/flow/section-cache.js";
import { Image, ImageHit, type Section } from "../../src/image/index.js";
import { ErrorCode } from "../../src/packet/index.js";
import { CodeWalker } from "../../src/session/flow-walk.js";
import { generate } from "../../src/unit/gen/index.js";
import { BRANCHES, msrs } from "../unit/gen/helpers.js";
import { programImage, randomProgram, randomRun, USER_BASE } from "../unit/gen/random-program.js";

/** The section image maps at hi:lo. */
function sectionAt(image: Image, hi: number, lo: number): Section {
  const hit = new ImageHit();
  assert.ok(image.find(hi, lo, hit) >= 0);
  return hit.section!;
}

test("SameCodeCaches: one cache for the same bytes at the same address, whichever image", () => {
  const file = new Uint8Array(0x3000).fill(0x90);
  const other = new Uint8Array(0x3000).fill(0x90);
  const images = ["a", "b", "c", "d", "e", "f"].map((name) => new Image(name));
  assert.ok(images[0]!.addSection("lib", file, 0x1000, 0x1000, 0, 0x400000) >= 0);
  // The same file, part and address, another image (and name): the same code.
  assert.ok(images[1]!.addSection("lib again", file, 0x1000, 0x1000, 0, 0x400000) >= 0);
  // Another address, another part, another buffer of the same bytes, zero fill.
  assert.ok(images[2]!.addSection("lib", file, 0x1000, 0x1000, 0, 0x500000) >= 0);
  assert.ok(images[3]!.addSection("lib", file, 0x2000, 0x1000, 0, 0x400000) >= 0);
  assert.ok(images[4]!.addSection("lib", other, 0x1000, 0x1000, 0, 0x400000) >= 0);
  assert.ok(images[5]!.addSection("bss", null, 0, 0x1000, 0, 0x400000) >= 0);
  const sections = images.map((image, i) => sectionAt(image, 0, i === 2 ? 0x500000 : 0x400000));
  const caches = new SameCodeCaches();
  assert.equal(caches.get(sections[0]!), undefined);
  const made = new SectionCache(sections[0]!);
  caches.set(sections[0]!, made);
  assert.equal(caches.get(sections[0]!), made);
  assert.equal(caches.get(sections[1]!), made, "the same bytes at the same address");
  for (const i of [2, 3, 4, 5]) assert.equal(caches.get(sections[i]!), undefined, `section ${i}`);
  // Each of those gets its own, which the first's does not replace.
  const zero = new SectionCache(sections[5]!);
  caches.set(sections[5]!, zero);
  assert.equal(caches.get(sections[5]!), zero);
  assert.equal(caches.get(sections[1]!), made);
});

test("SameCodeCaches: decoders of copies of an image, sharing caches, decode the instructions decoders with their own do", () => {
  const program = randomProgram(7, 60);
  const exec = randomRun(program, 7, { insns: 20000, interrupts: 0.01, wildReturns: 0.02 });
  const trace = generate(exec, { msrs: msrs({ preset: "skylake", caps: { ptwrite: true }, ctl: BRANCHES }) });
  // Each instruction's address, and the events between (where blocks end depends on what
  // the block cache held, as in libipt: a warm cache makes longer blocks of the same code).
  const decode = (image: Image, caches?: SameCodeCaches): string[] => {
    const dec = new BlockDecoder(trace.bytes, { image, config: defaultDecoderConfig(), caches });
    const block = new Block();
    const ev = new PtEvent();
    const walker = new CodeWalker();
    walker.use(image);
    const out: string[] = [];
    for (let status = dec.syncForward(); ; ) {
      if (status < 0) {
        assert.equal(status, -ErrorCode.Eos);
        break;
      }
      while (status >= 0 && status & Status.EventPending) {
        status = dec.event(ev);
        if (status >= 0) out.push(`event ${ev.type}`);
      }
      if (status < 0) continue;
      if (status & Status.Eos) break;
      status = dec.next(block);
      let hi = block.ipHi;
      let lo = block.ipLo;
      for (let n = block.ninsn; n > 0; n--) {
        out.push(`${hi.toString(16)}:${lo.toString(16)}`);
        assert.equal(walker.fetchInBlock(block, image, hi, lo), 0);
        assert.ok(walker.decode(hi, lo, block.mode) > 0);
        hi = walker.next.hi;
        lo = walker.next.lo;
      }
    }
    return out;
  };
  const want = decode(programImage(program));
  assert.ok(want.length > 20000);
  const caches = new SameCodeCaches();
  // Two images made apart (their sections are other objects), one after the other
  // with the same caches: the second decodes with what the first filled them with.
  const first = programImage(program);
  const second = programImage(program);
  assert.deepEqual(decode(first, caches), want);
  assert.deepEqual(decode(second, caches), want);
  const s1 = sectionAt(first, 0, USER_BASE);
  const s2 = sectionAt(second, 0, USER_BASE);
  assert.notEqual(s1, s2);
  assert.ok(caches.get(s1) !== undefined && caches.get(s1) === caches.get(s2), "one cache for both");
});
