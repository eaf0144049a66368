/**
 * The benchmark's large-footprint workload (bench/large-*.ts) meets its spec: at the
 * default size, at least 50k basic blocks and 2 MiB of code; at a tiny size, four ELF
 * images (main, two shared libraries, the kernel at 0xffffffff81000000) that map where
 * they should, every kind of block end, a multi-segment trace with timing packets,
 * interrupts and far transfers, which ptkit's block and instruction decoders decode
 * without errors to the run's instruction count. No timing here.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { blockPass, insnPass } from "../../bench/flow.js";
import { largeProgram, TERM_SIZE, Term, termCounts } from "../../bench/large-program.js";
import { LargeRun } from "../../bench/large-run.js";
import { DEFAULT_LARGE_CODE, largeImage, loadLargeWorkload } from "../../bench/large-workload.js";
import { analyseMix } from "../../bench/mix.js";
import { defaultDecoderConfig } from "../../src/event/index.js";
import { InsnClass } from "../../src/isa/types.js";
import { PacketType } from "../../src/packet/index.js";
import { infoClass } from "../../src/unit/exec/types.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-large-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("the default program has at least 50k blocks and 2 MiB of code, every kind of block end", () => {
  const p = largeProgram(12, DEFAULT_LARGE_CODE);
  assert.ok(p.blocks >= 50_000, `${p.blocks} blocks`);
  assert.ok(p.codeBytes >= 2 << 20, `${p.codeBytes} bytes of code`);
  assert.deepEqual(
    p.images.map((i) => i.name),
    ["main", "liba.so", "libb.so", "vmlinux"],
  );
  const counts = termCounts(p);
  assert.equal(counts.length, TERM_SIZE.length);
  for (const [t, n] of counts.entries()) assert.ok(n > 0, `no block ends with terminator ${t}`);
  // Deterministic from the seed, different with another.
  assert.deepEqual(largeProgram(12, 65536).images[0]!.code, largeProgram(12, 65536).images[0]!.code);
  assert.notDeepEqual(largeProgram(13, 65536).images[0]!.code, largeProgram(12, 65536).images[0]!.code);
});

test("with functions, calls go to functions' first blocks; without, the program is as it was", () => {
  const every = 32;
  const p = largeProgram(12, 1 << 20, undefined, every);
  const plain = largeProgram(12, 1 << 20);
  assert.equal(plain.functionBlocks, 0);
  // Only the calls' targets differ (the other workloads stay as they were made).
  let calls = 0;
  let moved = 0;
  for (const [i, img] of p.images.entries()) {
    const was = plain.images[i]!;
    assert.deepEqual(img.term, was.term);
    assert.deepEqual(img.start, was.start);
    for (let b = 0; b < img.blocks; b++) {
      if (img.term[b] !== Term.Call) {
        assert.equal(img.target[b], was.target[b], `${img.name} block ${b}`);
        continue;
      }
      calls++;
      const t = img.target[b]!;
      assert.ok(t > b && t < img.blocks, `${img.name} block ${b} calls block ${t}`);
      // A later function's entry, unless the block is in the last function.
      if (Math.floor(b / every) < Math.floor((img.blocks - 1) / every))
        assert.equal(t % every, 0, `${img.name} block ${b} calls block ${t}`);
      if (was.target[b]! % every !== 0) moved++;
    }
  }
  assert.ok(calls > 1000 && moved > calls / 2, `${calls} calls, ${moved} moved`);
  // The run's indirect calls too: each lands on a function's first block.
  const entries = new Set<number>();
  for (const img of p.images)
    for (let b = 0; b < img.blocks; b += every)
      entries.add(img.baseHi * 2 ** 32 + img.baseLo + img.start[b]!);
  // Return addresses: the block after a call's; the outermost return goes to main's first block.
  const afterCall = new Set<number>();
  for (const img of p.images)
    for (let b = 0; b + 1 < img.blocks; b++)
      if (img.term[b] === Term.Call || img.term[b] === Term.CallInd)
        afterCall.add(img.baseHi * 2 ** 32 + img.baseLo + img.start[b + 1]!);
  const mainEntry = p.images[0]!.baseLo + p.images[0]!.start[0]!;
  const x = new LargeRun(p, 12).segment(400_000);
  let indirect = 0;
  let outermost = 0;
  for (let i = 0; i + 1 < x.insnCount; i++) {
    const c = infoClass(x.info[i]!);
    if (c === InsnClass.Return && x.ipHi[i]! < 0xffffffff) {
      const back = x.ipHi[i + 1]! * 2 ** 32 + x.ipLo[i + 1]!;
      if (back >= 0xffffffff00000000) continue;
      if (back === mainEntry) outermost++;
      else assert.ok(afterCall.has(back), `a return at insn ${i} to ${back.toString(16)}`);
    }
    if (c !== InsnClass.CallIndirect && c !== InsnClass.Call) continue;
    const to = x.ipHi[i + 1]! * 2 ** 32 + x.ipLo[i + 1]!;
    // An interrupt may come between the call and its target's first instruction.
    if (to >= 0xffffffff00000000) continue;
    if (c === InsnClass.CallIndirect) indirect++;
    const img = p.images.find(
      (m) => to >= m.baseHi * 2 ** 32 + m.baseLo && to < m.baseHi * 2 ** 32 + m.baseLo + m.code.length,
    )!;
    const last = img.baseHi * 2 ** 32 + img.baseLo + img.start[(Math.ceil(img.blocks / every) - 1) * every]!;
    assert.ok(entries.has(to) || to > last, `a call at insn ${i} to ${to.toString(16)}`);
  }
  assert.ok(indirect > 100, `${indirect} indirect calls`);
  assert.ok(outermost > 10, `${outermost} outermost returns`);
});

test("a tiny workload: images mapped, a segmented trace with timing, both decoders agree with the run", () => {
  const options = { cacheDir: dir, codeBytes: 65536, traceBytes: 150_000, segmentInsns: 60_000 };
  const w = loadLargeWorkload(options);
  assert.match(w.source, /^generated/);
  assert.ok(w.codeBytes >= 65536);
  assert.ok(w.traceBytes >= 150_000);
  assert.ok(w.segments >= 2, `${w.segments} segments`);

  // Every image is mapped at its base, with the code its ELF file holds there.
  assert.deepEqual(
    w.elfs.map((e) => [e.path.slice(w.dir.length + 1), e.base, e.kernel]),
    [
      ["main", "0x400000", false],
      ["liba.so", "0x7f1000000000", false],
      ["libb.so", "0x7f2000000000", false],
      ["vmlinux", "0xffffffff81000000", true],
    ],
  );
  const image = largeImage(w);
  for (const e of w.elfs) {
    const file = new Uint8Array(readFileSync(e.path)).subarray(e.offset, e.offset + e.size);
    const base = BigInt(e.base);
    const got = new Uint8Array(e.size);
    const n = image.read(Number(base >> 32n), Number(base & 0xffffffffn), got, e.size);
    assert.equal(n, e.size, `${e.path}: read ${n} of ${e.size} bytes at ${e.base}`);
    assert.deepEqual(got, file);
  }

  // Branches, interrupts (FUP), far transfers, timing packets, one PSB+ per segment at least.
  const trace = new Uint8Array(readFileSync(w.trace));
  assert.equal(trace.length, w.traceBytes);
  const mix = analyseMix(trace);
  for (const t of [
    PacketType.Tip,
    PacketType.Tnt8,
    PacketType.Fup,
    PacketType.TipPge,
    PacketType.TipPgd,
    PacketType.Tsc,
    PacketType.Mtc,
    PacketType.Cyc,
  ])
    assert.ok(mix.counts[t]! > 0, `no packets of type ${t}`);
  assert.ok(mix.counts[PacketType.Psb]! >= w.segments);
  // Each segment ends with TraceEn cleared.
  assert.equal(mix.counts[PacketType.TipPgd], w.segments);
  // About a TIP every 25 instructions (15..40).
  const perTip = w.insns / mix.counts[PacketType.Tip]!;
  assert.ok(perTip > 15 && perTip < 40, `a TIP every ${perTip} instructions`);

  const config = defaultDecoderConfig();
  const block = blockPass(trace, image, config);
  const insn = insnPass(trace, image, config);
  assert.deepEqual(block, { insns: w.insns, errors: 0 });
  assert.deepEqual(insn, { insns: w.insns, errors: 0 });

  // The second time it comes from the cache, the same.
  const again = loadLargeWorkload(options);
  assert.match(again.source, /^cached/);
  assert.equal(again.insns, w.insns);
  assert.equal(again.traceBytes, w.traceBytes);
});
