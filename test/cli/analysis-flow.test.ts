/**
 * `ptkit flow` with the analysis outputs (--timeline, --folded, --coverage, --afl-map,
 * --edges, --jsonl, --symbols): the files are written, their contents match the library's
 * golden exports, and the ptxed output on stdout is the same with and without them.
 * Frames are named from the ELF files loaded without being asked; where they cannot
 * be, a warning says why once per file.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { Rng } from "../../bench/prng.js";
import { main } from "../../src/cli/ptkit.js";
import { parseElf } from "../../src/image/index.js";
import { ET_EXEC, PF_R, PF_X, SHT_PROGBITS, SHT_STRTAB, writeElf } from "../../tools/elf/elf-writer.js";
import { callProgram } from "../analysis/export-trace.js";
import { timelineFrames } from "../analysis/timeline-frames.js";
import { captureIo } from "../conformance/ptt.js";
import { Trace } from "../event/helpers.js";

const { asm, code, trace } = callProgram();

/** An ELF with the program at its address and a function symbol for each routine (none: stripped). */
function programElf(symbols = true): Uint8Array {
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
  const text = { name: ".text", type: SHT_PROGBITS, flags: 6n, addr: asm.base, data: code };
  const layout = writeElf({
    is64: true,
    le: true,
    type: ET_EXEC,
    machine: 62,
    segments: [{ flags: PF_R | PF_X, vaddr: asm.base, data: code }],
    sections: symbols
      ? [
          text,
          { name: ".symtab", type: 2, data: sym },
          { name: ".strtab", type: SHT_STRTAB, data: Uint8Array.from(str) },
        ]
      : [text],
  });
  if (!symbols) return layout.bytes;
  // .symtab's sh_link: .strtab.
  new DataView(layout.bytes.buffer).setUint32(layout.shoff + 2 * 64 + 40, 3, true);
  return layout.bytes;
}

function setup(): string {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-analysis-"));
  writeFileSync(join(dir, "code.bin"), code);
  writeFileSync(join(dir, "trace.pt"), trace);
  writeFileSync(join(dir, "prog.elf"), programElf());
  writeFileSync(join(dir, "stripped.elf"), programElf(false));
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
      ["--edges", "e.txt"],
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
    const frames = (doc: { traceEvents: object[] }) =>
      timelineFrames(doc.traceEvents).map((e) => `${e.name} ${e.ts} ${e.dur}`);
    assert.deepEqual(frames(timeline), frames(golden));
    assert.match(readFileSync(join(dir, "f.txt"), "utf8"), /^trace\.pt;0x401000 5$/m);
    const coverage = JSON.parse(readFileSync(join(dir, "c.json"), "utf8"));
    assert.equal(coverage.schema, "ptkit-coverage");
    assert.equal(readFileSync(join(dir, "afl.bin")).length, 65536);
    // The edge list is the JSON's edges, as text.
    assert.deepEqual(
      readFileSync(join(dir, "e.txt"), "utf8").split("\n").slice(0, -1),
      coverage.edges.map((e: { from: string; to: string; count: number }) => `${e.from} ${e.to} ${e.count}`),
    );
    assert.ok(coverage.edges.length > 5);
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

const NAMED = [
  "trace.pt;main 5",
  "trace.pt;main;f 3",
  "trace.pt;main;f;g 2",
  "trace.pt;main;g 2",
  "trace.pt;main;h 2",
  "trace.pt;outer 2",
  "trace.pt;outer;g 2",
];

const folded = (dir: string) => readFileSync(join(dir, "f.txt"), "utf8").trim().split("\n");

test("--elf names frames by the ELF's functions without being asked; --symbols changes nothing", async () => {
  const dir = setup();
  for (const extra of [[], ["--symbols"]]) {
    const r = await run(
      dir,
      "--elf",
      "prog.elf",
      "--pt",
      "trace.pt",
      ...extra,
      "--folded",
      "f.txt",
      "--quiet",
    );
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, "");
    assert.equal(r.err, "");
    assert.deepEqual(folded(dir), NAMED);
  }
  // The other outputs name frames too.
  const r = await run(
    dir,
    "--elf",
    "prog.elf",
    "--pt",
    "trace.pt",
    "--quiet",
    "--jsonl",
    "j.jsonl",
    "--timeline",
    "t.json",
  );
  assert.equal(r.code, 0, r.err);
  assert.match(readFileSync(join(dir, "j.jsonl"), "utf8"), /"type":"call".*"name":"f"/);
  assert.match(readFileSync(join(dir, "t.json"), "utf8"), /"name":"outer"/);
  const cov = await run(dir, "--elf", "prog.elf", "--pt", "trace.pt", "--quiet", "--coverage", "c.json");
  assert.equal(cov.code, 0, cov.err);
  assert.match(readFileSync(join(dir, "c.json"), "utf8"), /"symbol":"main"/);
});

test("a --raw range of an ELF file gets the file's symbols at the bias the range implies", async () => {
  const dir = setup();
  const elf = parseElf(readFileSync(join(dir, "prog.elf")));
  const seg = elf.loads[0]!;
  // The segment in two ranges, as ptkit simulate printed them: the second one's bias
  // comes from its file offset within the segment, not the segment's start.
  const half = Math.floor(seg.filesz / 2);
  const from = seg.offset + half;
  const at = asm.base + BigInt(half);
  const ranges = [
    ["--raw", `prog.elf:0x${seg.offset.toString(16)}-0x${from.toString(16)}:0x${asm.base.toString(16)}`],
    ["--raw", `prog.elf:0x${from.toString(16)}:0x${at.toString(16)}`],
  ].flat();
  const r = await run(dir, ...ranges, "--pt", "trace.pt", "--folded", "f.txt", "--quiet");
  assert.equal(r.code, 0, r.err);
  assert.equal(r.err, "");
  assert.deepEqual(folded(dir), NAMED);
});

test("frames without symbols: why and what to do, once per file", async () => {
  const dir = setup();
  const stripped = await run(
    dir,
    "--elf",
    "stripped.elf",
    "--pt",
    "trace.pt",
    "--folded",
    "f.txt",
    "--quiet",
  );
  assert.equal(stripped.code, 0, stripped.err);
  assert.deepEqual(stripped.err.trim().split("\n"), [
    "ptkit flow: warning: stripped.elf has no symbol table (stripped): its functions without a dynamic symbol are named by address (first at 0x401000); pass an unstripped copy or its debug file with --symbols FILE[:BASE].",
  ]);
  assert.match(folded(dir).join("\n"), /^trace\.pt;0x401000 5$/m);
  // The remedy: the unstripped file's symbols name the stripped file's code.
  const fixed = await run(
    dir,
    "--elf",
    "stripped.elf",
    "--pt",
    "trace.pt",
    "--symbols",
    "prog.elf",
    "--folded",
    "f.txt",
    "--quiet",
  );
  assert.equal(fixed.code, 0, fixed.err);
  assert.equal(fixed.err, "");
  assert.deepEqual(folded(dir), NAMED);
  const none = await run(
    dir,
    "--elf",
    "stripped.elf",
    "--pt",
    "trace.pt",
    "--symbols",
    "none.elf",
    "--folded",
    "f.txt",
  );
  assert.equal(none.code, 1);
  assert.match(none.err, /^ptkit flow: cannot read symbols: failed to open none\.elf: /);
  // Raw bytes: load the ELF file instead.
  const raw = await run(dir, ...RAW, "--pt", "trace.pt", "--folded", "f.txt", "--quiet");
  assert.equal(raw.code, 0, raw.err);
  assert.equal(raw.err.trim().split("\n").length, 1, raw.err);
  assert.match(
    raw.err,
    /^ptkit flow: warning: no symbols for 0x401000-0x[0-9a-f]+ \(code\.bin: raw bytes, not an ELF file\).*--elf FILE\[:BASE\]/,
  );
  // Without analysis outputs nothing is said.
  assert.equal((await run(dir, ...RAW, "--pt", "trace.pt", "--quiet")).err, "");
});

test("@FILE reads options from a file, one per line with its argument", async () => {
  const dir = setup();
  writeFileSync(join(dir, "image.args"), "# the program\n--elf prog.elf\n\n--quiet\n");
  const r = await run(dir, "@image.args", "--pt", "trace.pt", "--folded", "f.txt");
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, "");
  assert.deepEqual(folded(dir), NAMED);
  const missing = await run(dir, "@nowhere.args", "--pt", "trace.pt");
  assert.equal(missing.code, 1);
  assert.match(missing.err, /^ptkit flow: @nowhere\.args: cannot read the options file nowhere\.args: /);
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

test("timeline times: real time with a clock; TSC ticks or instructions labelled and warned about without", async () => {
  const dir = setup();
  // The same calls without timing packets.
  const untimed = new Trace().psb().mode(64).fup(asm.at("main")).psbend().tnt("!!").tnt("!.");
  writeFileSync(join(dir, "untimed.pt"), untimed.bytes());
  const cases = [
    { args: ["--nom-freq", "20", "--pt", "trace.pt"], unit: "ns", label: "", warning: undefined },
    {
      args: ["--pt", "trace.pt"],
      unit: "TSC tick",
      label: " [time: TSC ticks shown as ns]",
      warning:
        /^ptkit flow: warning: --timeline: times are TSC ticks, written as if nanoseconds: the TSC frequency is unknown; give it with --nom-freq N/,
    },
    {
      args: ["--nom-freq", "20", "--pt", "untimed.pt"],
      unit: "instruction",
      label: " [time: instructions shown as ns]",
      warning:
        /^ptkit flow: warning: --timeline: times are instruction counts, written as if nanoseconds: the trace has no timing packets/,
    },
  ];
  for (const c of cases) {
    const r = await run(dir, "--elf", "prog.elf", ...c.args, "--quiet", "--timeline", "t.json");
    assert.equal(r.code, 0, r.err);
    if (c.warning === undefined) assert.equal(r.err, "");
    else {
      assert.equal(r.err.trim().split("\n").length, 1, r.err);
      assert.match(r.err, c.warning);
    }
    const doc = JSON.parse(readFileSync(join(dir, "t.json"), "utf8"));
    assert.equal(doc.otherData.timeUnit, c.unit);
    const trace = c.args.at(-1);
    const process = doc.traceEvents.find((e: { name: string }) => e.name === "process_name");
    assert.equal(process.args.name, `${trace}${c.label}`);
  }
});
