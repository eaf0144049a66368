/**
 * `ptkit flow` with the analysis outputs (--timeline, --folded, --coverage, --afl-map,
 * --jsonl, --symbols): the files are written, their contents match the library's
 * golden exports, and the ptxed output on stdout is the same with and without them.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { Rng } from "../../bench/prng.js";
import { main } from "../../src/cli/ptkit.js";
import { callProgram } from "../analysis/export-trace.js";
import { captureIo } from "../conformance/ptt.js";
import { ET_EXEC, PF_R, PF_X, SHT_PROGBITS, SHT_STRTAB, writeElf } from "../image/elf-writer.js";

const { asm, code, trace } = callProgram();

/** An ELF with the program at its address and a function symbol for each routine. */
function programElf(): Uint8Array {
  const names = ["main", "f", "g", "h", "deep", "outer"];
  const sizes = new Map<string, bigint>();
  const starts = names.map((n) => asm.at(n)).sort((a, b) => (a < b ? -1 : 1));
  const end = asm.base + BigInt(code.length);
  for (const n of names) {
    const at = asm.at(n);
    sizes.set(n, (starts.find((s) => s > at) ?? end) - at);
  }
  const str: number[] = [0];
  const sym = new Uint8Array((names.length + 1) * 24);
  const v = new DataView(sym.buffer);
  names.forEach((n, k) => {
    const p = (k + 1) * 24;
    v.setUint32(p, str.length, true);
    for (const ch of n) str.push(ch.charCodeAt(0));
    str.push(0);
    v.setUint8(p + 4, 0x12); // global function
    v.setUint16(p + 6, 1, true); // .text
    v.setBigUint64(p + 8, asm.at(n), true);
    v.setBigUint64(p + 16, sizes.get(n)!, true);
  });
  const layout = writeElf({
    is64: true,
    le: true,
    type: ET_EXEC,
    machine: 62,
    segments: [{ flags: PF_R | PF_X, vaddr: asm.base, data: code }],
    sections: [
      { name: ".text", type: SHT_PROGBITS, flags: 6n, addr: asm.base, data: code },
      { name: ".symtab", type: 2, data: sym },
      { name: ".strtab", type: SHT_STRTAB, data: Uint8Array.from(str) },
    ],
  });
  // .symtab's sh_link: .strtab.
  new DataView(layout.bytes.buffer).setUint32(layout.shoff + 2 * 64 + 40, 3, true);
  return layout.bytes;
}

function setup(): string {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-analysis-"));
  writeFileSync(join(dir, "code.bin"), code);
  writeFileSync(join(dir, "trace.pt"), trace);
  writeFileSync(join(dir, "prog.elf"), programElf());
  return dir;
}

async function run(dir: string, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = captureIo(dir);
  const status = await main(["flow", ...args], io);
  return { code: status, out: io.out.join(""), err: io.err.join("") };
}

const RAW = ["--raw", `code.bin:0x${asm.base.toString(16)}`];

test("the outputs are written and stdout keeps ptxed's output", async () => {
  const dir = setup();
  const plain = await run(dir, ...RAW, "--pt", "trace.pt");
  assert.equal(plain.code, 0, plain.err);
  for (const decoder of ["--block-decoder", "--insn-decoder"]) {
    const outs = [
      ["--timeline", "t.json"],
      ["--folded", "f.txt"],
      ["--coverage", "c.json"],
      ["--afl-map", "afl.bin"],
      ["--jsonl", "flow.jsonl"],
    ].flat();
    const r = await run(dir, decoder, ...RAW, "--nom-freq", "20", "--pt", "trace.pt", ...outs);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, plain.out);
    const timeline = JSON.parse(readFileSync(join(dir, "t.json"), "utf8"));
    assert.equal(timeline.otherData.clock, "ns");
    // --nom-freq 20: a 2 GHz TSC, as in the library's golden timeline.
    assert.equal(timeline.otherData.nsPerTick, 0.5);
    const golden = JSON.parse(
      readFileSync(new URL("../../../test/fixtures/golden/calls.timeline.json", import.meta.url), "utf8"),
    );
    const frames = (doc: { traceEvents: { ph: string; ts: number; dur: number; name: string }[] }) =>
      doc.traceEvents.filter((e) => e.ph === "X").map((e) => `${e.name} ${e.ts} ${e.dur}`);
    assert.deepEqual(frames(timeline), frames(golden));
    assert.match(readFileSync(join(dir, "f.txt"), "utf8"), /^trace\.pt;0x401000 5$/m);
    assert.equal(JSON.parse(readFileSync(join(dir, "c.json"), "utf8")).schema, "ptkit-coverage");
    assert.equal(readFileSync(join(dir, "afl.bin")).length, 65536);
    const lines = readFileSync(join(dir, "flow.jsonl"), "utf8").trim().split("\n");
    assert.equal(lines.filter((l) => l.includes('"type":"insn"')).length, 18);
  }
});

test("the ticks the timeline needs change nothing ptxed prints, not even --time", async () => {
  const dir = setup();
  const args = [...RAW, "--nom-freq", "20", "--pt", "trace.pt", "--time", "--event:time"];
  const plain = await run(dir, ...args);
  const timed = await run(dir, ...args, "--timeline", "t.json");
  assert.equal(timed.out, plain.out);
  assert.match(plain.out, /100400/);
  // Asked for, ticks are printed as ever.
  assert.match(
    (await run(dir, ...RAW, "--event:tick", "--pt", "trace.pt", "--timeline", "t.json")).out,
    /\[tick\]/,
  );
});

test("--symbols names frames by the ELF's functions", async () => {
  const dir = setup();
  const r = await run(
    dir,
    "--elf",
    "prog.elf",
    "--pt",
    "trace.pt",
    "--symbols",
    "--folded",
    "f.txt",
    "--quiet",
  );
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, "");
  assert.deepEqual(readFileSync(join(dir, "f.txt"), "utf8").trim().split("\n"), [
    "trace.pt;main 5",
    "trace.pt;main;f 3",
    "trace.pt;main;f;g 2",
    "trace.pt;main;g 2",
    "trace.pt;main;h 2",
    "trace.pt;outer 2",
    "trace.pt;outer;g 2",
  ]);
});

test("bad analysis options and unwritable files are reported", async () => {
  const dir = setup();
  const weight = await run(dir, ...RAW, "--pt", "trace.pt", "--folded-weight", "cycles");
  assert.equal(weight.code, 1);
  assert.match(weight.err, /--folded-weight: want insn or time: cycles/);
  const missing = await run(dir, ...RAW, "--pt", "trace.pt", "--timeline");
  assert.match(missing.err, /--timeline: missing argument/);
  const depth = await run(dir, ...RAW, "--pt", "trace.pt", "--stack-depth", "0");
  assert.match(depth.err, /--stack-depth: want a depth/);
  const unwritable = await run(
    dir,
    ...RAW,
    "--pt",
    "trace.pt",
    "--timeline",
    join(dir, "no", "such", "dir", "t.json"),
  );
  assert.equal(unwritable.code, 1);
  assert.match(unwritable.err, /cannot write .*t\.json/);
});

test("corrupted traces: the outputs stay well-formed and the decode goes on", async () => {
  const dir = setup();
  const rng = new Rng(6);
  for (let round = 0; round < 30; round++) {
    const bad = Uint8Array.from(trace);
    // Flip a few bytes after the first PSB+ and cut the end at random.
    for (let k = 0; k < 4; k++) bad[20 + rng.below(bad.length - 20)] = rng.below(256);
    writeFileSync(join(dir, "bad.pt"), bad.subarray(0, 20 + rng.below(bad.length - 20)));
    const outs = ["--timeline", "t.json", "--folded", "f.txt", "--coverage", "c.json", "--jsonl", "j.jsonl"];
    const r = await run(dir, ...RAW, "--pt", "bad.pt", "--quiet", "--resync-on-error", ...outs);
    assert.equal(r.code, 0, r.err);
    const doc = JSON.parse(readFileSync(join(dir, "t.json"), "utf8"));
    assert.equal(doc.otherData.schema, "ptkit-timeline");
    JSON.parse(readFileSync(join(dir, "c.json"), "utf8"));
    for (const line of readFileSync(join(dir, "j.jsonl"), "utf8").trim().split("\n")) JSON.parse(line);
    for (const line of readFileSync(join(dir, "f.txt"), "utf8").trim().split("\n").filter(Boolean))
      assert.match(line, /^\S+ \d+$/);
  }
});
