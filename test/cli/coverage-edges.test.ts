/**
 * Coverage is exact: on small programs with hand-built traces, `ptkit flow --edges`
 * lists every transfer of control with its count (conditional jumps taken and not
 * taken, direct and indirect jumps and calls, compressed and uncompressed returns,
 * SYSCALL/SYSRET, an interrupt and its IRET), none across a gap (tracing off and on,
 * an overflow, a decode error and the resync after it: the first block after one is
 * reached from nowhere in the AFL map), and the AFL map's counters stop at 255. Both
 * decoders write the same --edges, --coverage and --afl-map files.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { main } from "../../src/cli/ptkit.js";
import { captureIo } from "../conformance/ptt.js";
import { Trace } from "../event/helpers.js";
import { Asm } from "../flow/asm.js";

const BASE = 0x401000n;
const FILES = ["e.txt", "c.json", "afl.bin"];
const DECODERS = [["--insn-decoder"], ["--block-decoder"], ["--block-decoder", "--block:end-on-call"]];

/** The AFL location of a block at `addr` (AFL++'s QEMU mode). */
const loc = (addr: bigint) => Number(((addr >> 4n) ^ (addr << 8n)) & 0xffffn);

interface Run {
  /** The edge list's lines. */
  edges: string[];
  /** The AFL map's non-zero bytes: index → count. */
  afl: Map<number, number>;
}

/** Decode `trace` over `asm`'s code with each decoder: the outputs (the same with each). */
async function coverage(asm: Asm, trace: Trace): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-edges-"));
  writeFileSync(join(dir, "code.bin"), asm.build());
  writeFileSync(join(dir, "trace.pt"), trace.bytes());
  const runs: Buffer[][] = [];
  for (const decoder of DECODERS) {
    const io = captureIo(dir);
    const status = await main(
      ["flow", ...decoder, "--raw", `code.bin:0x${BASE.toString(16)}`, "--pt", "trace.pt", "--quiet"].concat(
        ["--edges", "--coverage", "--afl-map"].flatMap((o, k) => [o, FILES[k]!]),
      ),
      io,
    );
    assert.equal(status, 0, io.err.join(""));
    runs.push(FILES.map((f) => readFileSync(join(dir, f))));
  }
  for (const [k, files] of runs.entries()) {
    FILES.forEach((f, i) => {
      assert.ok(files[i]!.equals(runs[0]![i]!), `${DECODERS[k]!.join(" ")}: ${f} differs`);
    });
  }
  const [edges, , map] = runs[0]!;
  const afl = new Map<number, number>();
  map!.forEach((b, i) => {
    if (b !== 0) afl.set(i, b);
  });
  return { edges: edges!.toString().split("\n").slice(0, -1), afl };
}

/** The expected edge lines: [from label, to label, count], sorted as the list is. */
function lines(asm: Asm, edges: [string, string, number][]): string[] {
  return edges
    .map(([f, t, n]) => ({ f: asm.at(f), t: asm.at(t), n }))
    .sort((x, y) => (x.f !== y.f ? (x.f < y.f ? -1 : 1) : x.t < y.t ? -1 : x.t > y.t ? 1 : 0))
    .map(({ f, t, n }) => `0x${f.toString(16)} 0x${t.toString(16)} ${n}`);
}

/** A trace of code at BASE from label `start` on (64-bit mode). */
function begin(asm: Asm, start: string): Trace {
  return new Trace().psb().mode(64).fup(asm.at(start)).psbend();
}

test("conditional jumps taken and not taken, a direct jump, a direct call and a compressed return", async () => {
  const a = new Asm(BASE);
  a.label("c1").jz("t1").nop();
  a.label("t1").label("c2").jz("t2").label("f2").nop();
  a.label("j").jmp("t3");
  a.label("t2").nop();
  a.label("t3").label("k").call("fn").label("back").nop().label("end").hlt();
  a.label("fn").label("r").ret();
  const t = begin(a, "c1").tnt("!.!").fup(a.at("end")).pgd();
  const run = await coverage(a, t);
  assert.deepEqual(
    run.edges,
    lines(a, [
      ["c1", "t1", 1],
      ["c2", "f2", 1],
      ["j", "t3", 1],
      ["k", "fn", 1],
      ["r", "back", 1],
    ]),
  );
});

test("an indirect call, an uncompressed return and an indirect jump", async () => {
  const a = new Asm(BASE);
  a.label("main").callInd().label("back").jmpInd();
  a.label("fn").nop().label("r").ret();
  a.label("tgt").nop().label("end").hlt();
  const t = begin(a, "main").tip(a.at("fn")).tip(a.at("back")).tip(a.at("tgt")).fup(a.at("end")).pgd();
  const run = await coverage(a, t);
  assert.deepEqual(
    run.edges,
    lines(a, [
      ["main", "fn", 1],
      ["r", "back", 1],
      ["back", "tgt", 1],
    ]),
  );
});

test("far transfers: SYSCALL and SYSRET, an interrupt (from where it was taken) and its IRET", async () => {
  const a = new Asm(BASE);
  a.label("main").syscall().label("after").nop().label("m2").nop().label("end").hlt();
  a.label("kentry").nop().label("sysret").sysret();
  a.label("h").nop().label("iret").iret();
  const t = begin(a, "main").tip(a.at("kentry")).tip(a.at("after"));
  // An interrupt at m2 (not yet run) to h; IRET back to m2.
  t.fup(a.at("m2")).tip(a.at("h")).tip(a.at("m2"));
  t.fup(a.at("end")).pgd();
  const run = await coverage(a, t);
  assert.deepEqual(
    run.edges,
    lines(a, [
      ["main", "kentry", 1],
      ["sysret", "after", 1],
      ["m2", "h", 1],
      ["iret", "m2", 1],
    ]),
  );
  // The chain of block entries goes on through the interrupt: h is entered from after's block.
  const at = (l: string) => loc(a.at(l));
  assert.equal(run.afl.get(at("h") ^ (at("after") >> 1)), 1);
});

test("no edge across tracing off and on: the block after TIP.PGE is reached from nowhere", async () => {
  const a = new Asm(BASE);
  a.label("main").nop().label("j").jmpInd();
  a.label("res").jz("end").nop().label("end").hlt();
  // The indirect jump leaves the traced code (TIP.PGD with its target), tracing resumes at res.
  const t = begin(a, "main").pgd(0x7f0000001000n).pge(a.at("res")).tnt("!").fup(a.at("end")).pgd();
  const run = await coverage(a, t);
  assert.deepEqual(run.edges, lines(a, [["res", "end", 1]]));
  const at = (l: string) => loc(a.at(l));
  assert.deepEqual(
    run.afl,
    new Map([
      [at("main"), 1],
      [at("res"), 1],
      [at("end") ^ (at("res") >> 1), 1],
    ]),
  );
});

test("no edge across an overflow, not even from the taken branch before it", async () => {
  const a = new Asm(BASE);
  a.label("c1").jz("t1").nop().label("t1").nop().label("r").nop().label("c2").jz("end").nop();
  a.label("end").hlt();
  const t = begin(a, "c1").tnt("!").ovf();
  // IP compression restarts after an overflow.
  t.enc.last.reset();
  t.fup(a.at("r")).tnt("!").fup(a.at("end")).pgd();
  const run = await coverage(a, t);
  assert.deepEqual(run.edges, lines(a, [["c2", "end", 1]]));
  const at = (l: string) => loc(a.at(l));
  assert.equal(run.afl.get(at("r")), 1);
  assert.equal(run.afl.size, 3);
});

test("no edge across a decode error: the block where the decode resyncs is reached from nowhere", async () => {
  const a = new Asm(BASE);
  a.label("main").nop().label("j").jmpInd().label("r").nop().label("c").jz("end").nop().label("end").hlt();
  // A conditional-branch bit where the indirect jump needs a TIP: an error where the
  // decoder has read up to the next PSB; it resyncs at the PSB after that one, at r.
  const t = begin(a, "main").tnt("!").psb().mode(64).fup(a.at("r")).psbend();
  t.psb().mode(64).fup(a.at("r")).psbend().tnt("!").fup(a.at("end")).pgd();
  const run = await coverage(a, t);
  assert.deepEqual(run.edges, lines(a, [["c", "end", 1]]));
  const at = (l: string) => loc(a.at(l));
  assert.equal(run.afl.get(at("r")), 1);
});

test("a loop run 300 times: the edge counts 300, its AFL byte stops at 255", async () => {
  const a = new Asm(BASE);
  a.label("loop").add().label("c").jz("loop").label("end").hlt();
  const t = begin(a, "loop");
  // Taken 299 times, then not taken.
  let bits = `${"!".repeat(299)}.`;
  for (; bits.length > 0; bits = bits.slice(6)) t.tnt(bits.slice(0, 6));
  t.fup(a.at("end")).pgd();
  const run = await coverage(a, t);
  assert.deepEqual(
    run.edges,
    lines(a, [
      ["c", "loop", 299],
      ["c", "end", 1],
    ]),
  );
  const at = (l: string) => loc(a.at(l));
  assert.equal(run.afl.get(at("loop") ^ (at("loop") >> 1)), 255);
});
