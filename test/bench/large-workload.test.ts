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
import { largeProgram, TERM_SIZE, termCounts } from "../../bench/large-program.js";
import { DEFAULT_LARGE_CODE, largeImage, loadLargeWorkload } from "../../bench/large-workload.js";
import { analyseMix } from "../../bench/mix.js";
import { defaultDecoderConfig } from "../../src/event/index.js";
import { PacketType } from "../../src/packet/index.js";

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
