/**
 * The fast coverage decode (analysis/coverage-decode.ts, the decision graph of
 * flow/decision-graph.ts) against the general one: `ptkit flow --quiet --stat:insn`
 * with `--afl-map` alone (the map without tables), with `--afl-map --coverage
 * --edges`, and with those and `--folded` (the fast decode feeding the call-stack
 * tracker), each run both ways, must print the same and write the same files, byte
 * for byte, whether the fast decode covers the trace or hands it over. And it must cover the
 * traces it is for: the fuzzing workload (test cases enabled by TIP.PGE and ended by
 * FUP + TIP.PGD, with and without timing packets and RET compression), kernel-traced
 * programs (system calls, interrupts, indirect branches). On corrupted traces it
 * either hands over or agrees.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { loadFuzzWorkload } from "../../bench/fuzz-workload.js";
import { largeFlowArgs } from "../../bench/large-workload.js";
import { CallAnalysis, Coverage, decodeCoverage, Handover } from "../../src/analysis/index.js";
import { useWasmMapLoop } from "../../src/analysis/wasm/map-loop-engine.js";
import { ErrorCode } from "../../src/base/errors.js";
import { runFlow } from "../../src/cli/flow/flow.js";
import { DecisionGraph, drive, Insn, InsnDecoder } from "../../src/flow/index.js";
import { parseElf } from "../../src/image/elf.js";
import { Image } from "../../src/image/index.js";
import { errorMessage, Flag, Packet, PacketEncoder, PacketType, TraceBytes } from "../../src/packet/index.js";
import { captureIo, countInputs, FILTER_OPTIONS, ptxedInputs } from "../conformance/ptt.js";
import { cutAndEdited } from "../packet/hostile.js";
import { BRANCHES, type CtlFields } from "../unit/gen/helpers.js";
import { tracedProgram } from "../unit/gen/random-program.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-cov-decode-"));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  /** The files written (the map, and with the tables the JSON and the edge list). */
  files: (Buffer | undefined)[];
  /** The fast decode's outcome (undefined: it did not run). */
  fast: { status: number; reason: string } | undefined;
}

/**
 * The outputs asked for: none (errors and the instruction count alone), the map alone,
 * coverage with the tables, or with folded stacks too (through the call-stack tracker).
 */
type Mode = "none" | "map" | "tables" | "stacks";
const MODES: Mode[] = ["none", "map", "tables", "stacks"];
const FILES = ["the map", "the JSON", "the edges", "the folded stacks"];

/** `ptkit flow ...argv` with the `mode` outputs in `cwd`, fast (where it covers the trace) or general. */
async function flow(cwd: string, argv: string[], general: boolean, mode: Mode): Promise<Run> {
  const io = captureIo(cwd);
  const name = (ext: string) => join(dir, `${general ? "general" : "fast"}.${ext}`);
  const outputs = mode === "none" ? [] : ["--afl-map", name("bin")];
  if (mode === "tables" || mode === "stacks")
    outputs.push("--coverage", name("json"), "--edges", name("txt"));
  if (mode === "stacks") outputs.push("--folded", name("folded"));
  for (const ext of ["bin", "json", "txt", "folded"]) rmSync(name(ext), { force: true });
  let fast: Run["fast"];
  const code = await runFlow([...argv, ...outputs], io, {
    generalCoverage: general,
    onFastCoverage: (r) => {
      fast = { status: r.status, reason: r.reason };
    },
  });
  const files = outputs
    .filter((_, k) => k % 2 === 1)
    .map((f) => {
      try {
        return readFileSync(f);
      } catch {
        return undefined;
      }
    });
  return { code, stdout: io.out.join(""), stderr: io.err.join(""), files, fast };
}

/**
 * Both ways, in each {@link Mode}: the same exit code, output and files. Returns the
 * fast decodes' outcome (the same in every mode) and the map's non-zero bytes.
 */
async function compare(cwd: string, argv: string[]): Promise<{ fast: Run["fast"]; lit: number }> {
  let outcome: Run["fast"];
  let lit = 0;
  for (const mode of MODES) {
    const what =
      mode === "none"
        ? "no output"
        : mode === "map"
          ? "the map alone"
          : mode === "tables"
            ? "with the tables"
            : "with folded stacks";
    const general = await flow(cwd, argv, true, mode);
    const fast = await flow(cwd, argv, false, mode);
    assert.equal(general.fast, undefined, "the general run used the fast decode");
    assert.equal(fast.code, general.code, `${what}: exit code (${fast.stderr}${general.stderr})`);
    assert.equal(fast.stdout, general.stdout, `${what}: stdout`);
    assert.equal(fast.stderr, general.stderr, `${what}: stderr`);
    for (const [k, f] of fast.files.entries()) {
      const g = general.files[k];
      assert.equal(f === undefined, g === undefined, `${what}: file ${k} written`);
      if (f !== undefined) assert.ok(f.equals(g!), `${what}: ${FILES[k]} differ`);
    }
    if (mode !== "none") assert.deepEqual(fast.fast, outcome, `${what}: the same outcome`);
    outcome = fast.fast;
    if (mode === "map") lit = general.files[0]?.filter((b) => b !== 0).length ?? 0;
  }
  return { fast: outcome, lit };
}

/** `cov`'s JSON document, parsed. */
function coverageJson(cov: Coverage): { blocks: unknown[]; dropped: { blocks: number; edges: number } } {
  const chunks: Uint8Array[] = [];
  cov.write((chunk) => chunks.push(chunk.slice()));
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

const w = loadFuzzWorkload({ cacheDir: dir, codeBytes: 16384, traceBytes: 80_000, caseInsns: 20_000 });

describe("the fuzzing workload: the fast decode covers it and agrees", () => {
  for (const [what, trace] of [
    ["no timing, no RET compression", w.trace],
    ["TSC, MTC, CYC and RET compression", w.timingTrace],
  ] as const) {
    test(what, async () => {
      const { fast, lit } = await compare(dir, [
        "--quiet",
        "--stat:insn",
        ...largeFlowArgs(w),
        "--pt",
        trace,
      ]);
      assert.deepEqual(fast, { status: 0, reason: "" });
      assert.ok(lit > 100, `${lit} map bytes set`);
    });
  }

  test("errors and the count alone: the fast decode without a decoder named, the named decoder's otherwise", async () => {
    const argv = ["--quiet", "--stat:insn", ...largeFlowArgs(w), "--pt", w.trace];
    const unnamed = await flow(dir, argv, false, "none");
    assert.deepEqual(unnamed.fast, { status: 0, reason: "" });
    assert.equal(unnamed.stdout, `insn: ${w.insns}.\n`);
    for (const named of ["--block-decoder", "--insn-decoder"]) {
      const r = await flow(dir, [named, ...argv], false, "none");
      assert.equal(r.fast, undefined, `${named} took the fast decode`);
      assert.equal(r.stdout, unnamed.stdout, named);
    }
    // --stat counts blocks too, which only the block decoder knows.
    assert.equal(
      (
        await flow(
          dir,
          argv.map((a) => (a === "--stat:insn" ? "--stat" : a)),
          false,
          "none",
        )
      ).fast,
      undefined,
    );
  });

  test("the library call: the run's instruction count, and the map again from a cleared one", () => {
    const image = new Image();
    assert.ok(image.addElf(parseElf(new Uint8Array(readFileSync(w.elfs[0]!.path)))) > 0);
    const cov = new Coverage(undefined, true);
    const graph = new DecisionGraph(image);
    const bytes = new Uint8Array(readFileSync(w.trace));
    const r = decodeCoverage(TraceBytes.of(bytes), graph, cov);
    assert.equal(r.status, 0, r.reason);
    assert.equal(r.insns, w.insns);
    const first = cov.aflMap.slice();
    cov.clear();
    // The graph is kept: the second decode makes no nodes.
    const nodes = graph.size;
    assert.equal(decodeCoverage(TraceBytes.of(bytes), graph, cov).status, 0);
    assert.equal(graph.size, nodes);
    assert.deepEqual(cov.aflMap, first);
  });
});

const hex = (hi: number, lo: number) => `0x${((BigInt(hi) << 32n) | BigInt(lo)).toString(16)}`;

const CONFIGS: [string, CtlFields, boolean][] = [
  // [name, trace configuration, whether the fast decode covers it]
  ["user and kernel", BRANCHES, true],
  ["with TSC, MTC and CYC", { ...BRANCHES, TSCEn: 1, MTCEn: 1, MTCFreq: 3, CYCEn: 1 }, true],
  ["no RET compression", { ...BRANCHES, TSCEn: 1, DisRETC: 1 }, true],
  // Tracing off at each system call (TIP.PGD without FUP) and on at its return.
  ["user only", { ...BRANCHES, OS: 0 }, true],
];

describe("generated kernel-traced programs: the same map either way", () => {
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12]) {
    // Seeds 10-12: a small internal buffer that overflows (OVF, then FUP or TIP.PGE).
    const overflow = seed > 8;
    const [name, ctl, covered] = CONFIGS[seed % CONFIGS.length]!;
    test(`program ${seed}, ${name}${overflow ? ", overflowing" : ""}`, async () => {
      const { cwd, raw, overflows } = tracedProgram(dir, seed, ctl, overflow);
      if (overflow) assert.ok(overflows > 0, "no overflow");
      const argv = [...raw, "--pt", "trace.pt", "--quiet", "--stat:insn"];
      const { fast, lit } = await compare(cwd, argv);
      assert.ok(fast !== undefined, "the fast decode did not run");
      if (covered) assert.deepEqual(fast, { status: 0, reason: "" });
      else assert.equal(fast.status, -1);
      // Overflows lose much of the trace.
      assert.ok(lit > (overflow ? 10 : 20), `${lit} map bytes set`);
    });
  }
});

/**
 * The conformance checks' code, trace, CPU (its errata, which the walk works around)
 * and address filter (SKL014's checks: the walk hands their TIP.PGD without IP over).
 */
const ptxed = ptxedInputs(new Set(["--raw", "--pt", "--cpu", ...FILTER_OPTIONS]));

describe("libipt's conformance traces: the same map either way", {
  skip: ptxed.length === 0 ? "the shared corpus (ptt) is absent" : false,
}, () => {
  test(`the ptxed checks' ${ptxed.length} inputs`, async () => {
    const covered = await countInputs(
      ptxed,
      async (c) => (await compare(c.dir, [...c.argv, "--quiet", "--stat:insn"])).fast?.status === 0,
    );
    // Most of these traces test what the general decoder is for (far transfers, TSX,
    // overflows, 16- and 32-bit code, power events): some are plain 64-bit flow.
    assert.ok(ptxed.length > 100 && covered > 10, `${covered} of ${ptxed.length} traces decoded fast`);
  });
});

test("corrupted and cut fuzzing traces: the fast decode hands over or writes the general decode's map", async () => {
  const bytes = new Uint8Array(readFileSync(w.timingTrace)).subarray(0, 24_000);
  const cwd = mkdtempSync(join(dir, "mut-"));
  let agreed = 0;
  await fc.assert(
    fc.asyncProperty(cutAndEdited(bytes), async (t) => {
      writeFileSync(join(cwd, "t.pt"), t);
      const { fast } = await compare(cwd, ["--quiet", "--stat:insn", ...largeFlowArgs(w), "--pt", "t.pt"]);
      if (fast?.status === 0) agreed++;
    }),
    { numRuns: 80, seed: 7 },
  );
  // A cut at a packet's end with no edit in the code's way is still a trace to decode.
  assert.ok(agreed > 5, `${agreed} of 80 decoded fast`);
});

test("a trace entering a long run of straight-line code at many places: the graph's walk is bounded, and then it is full", () => {
  // 64 KiB of NOPs and a RET at 0x10000; each TIP.PGE enters the run somewhere else.
  const code = new Uint8Array(0x10001).fill(0x90);
  code[0x10000] = 0xc3;
  const image = new Image();
  image.addRaw("nops", code, 0, 0x10000);
  const graph = new DecisionGraph(image, 1 << 21, 200_000);
  let made = 0;
  for (let k = 0; k < 64; k++) {
    const id = graph.node(0, 0x10000 + k * 1024);
    if (id < 0) break;
    made++;
  }
  // Each node walks to the RET: 65,537 - k * 1024 instructions; 200,000 of them make 3.
  assert.equal(made, 3);
  assert.ok(graph.walked >= 200_000 - 65_537 && graph.walked <= 200_000, `${graph.walked} walked`);
  assert.equal(graph.node(0, 0x10000 + 63 * 1024), -1);
  // A cleared graph (a new image) has its whole budget again.
  graph.clear();
  assert.equal(graph.size, 0);
  assert.ok(graph.node(0, 0x10000) >= 0);
  assert.equal(graph.walked, 65_537);
});

describe("an address filter: the walk takes the trace (only SKL014 asks the filter)", () => {
  // FilterEn over the program's code, as it was traced.
  const [from, to] = w.filter.split("-");
  const filter = ["--filter:addr0_cfg", "1", "--filter:addr0_a", from!, "--filter:addr0_b", to!];
  for (const cpu of [undefined, "6/61", "6/78"])
    test(`the fuzzing workload with timing and RET compression${cpu ? `, --cpu ${cpu}` : ""}`, async () => {
      const argv = [...(cpu ? ["--cpu", cpu] : []), ...filter, "--quiet", "--stat:insn", ...largeFlowArgs(w)];
      const { fast } = await compare(dir, [...argv, "--pt", w.timingTrace]);
      assert.deepEqual(fast, { status: 0, reason: "" });
    });
});

test("SKL014: a TIP.PGD without IP after a direct jump out of the filter is handed over (the flow decoders place it at the jump); without the filter, or the erratum, the walk takes it", async () => {
  // JMP 0x1100 at 0x1000 (in the filter), NOP and JMP RAX at 0x1100 (out of it).
  const cwd = mkdtempSync(join(dir, "skl014-"));
  const code = new Uint8Array(0x103).fill(0xcc);
  code.set([0xe9, 0xfb, 0x00, 0x00, 0x00], 0);
  code.set([0x90, 0xff, 0xe0], 0x100);
  writeFileSync(join(cwd, "code.bin"), code);
  const pkt = new Packet();
  const enc = start64(pkt);
  enc.emitSuppressed(PacketType.TipPgd);
  writeFileSync(join(cwd, "trace.pt"), enc.bytes());
  const filter = ["--filter:addr0_cfg", "1", "--filter:addr0_a", "0x1000", "--filter:addr0_b", "0x10ff"];
  const base = ["--raw", "code.bin:0x1000", "--pt", "trace.pt", "--quiet", "--stat:insn"];
  // Skylake has SKL014, Broadwell not.
  for (const [cpu, withFilter, insns, walked] of [
    ["6/78", true, 1, false],
    ["6/78", false, 3, true],
    ["6/61", true, 3, true],
  ] as const) {
    const argv = ["--cpu", cpu, ...(withFilter ? filter : []), ...base];
    const { fast } = await compare(cwd, argv);
    const what = `--cpu ${cpu}${withFilter ? " with the filter" : ""}`;
    assert.equal(fast?.status, walked ? 0 : -1, `${what}: ${fast?.reason}`);
    const out = (await flow(cwd, argv, true, "none")).stdout;
    assert.ok(out.includes(`insn: ${insns}.`), `${what}: ${out}`);
  }
});

describe("a CPU's errata: the walk works around them as the flow decoders do", () => {
  // Broadwell (BDM70, BDM64), Skylake client (SKD007's CYC: the packet loop in JavaScript,
  // not the fused one; SKD010, SKD022, BDM70, ...), Skylake-SP (SKZ84's TMA), Apollo Lake
  // (APL11, APL12: an OVF hands over).
  for (const cpu of ["6/61", "6/78", "6/85", "6/92"])
    test(`the fuzzing workload with timing and RET compression, --cpu ${cpu}`, async () => {
      const { fast } = await compare(dir, [
        "--cpu",
        cpu,
        "--quiet",
        "--stat:insn",
        ...largeFlowArgs(w),
        "--pt",
        w.timingTrace,
      ]);
      assert.deepEqual(fast, { status: 0, reason: "" });
    });

  for (const wasm of [true, false])
    test(`SKD007: a two-byte CYC ending in 0x02 and an 0xF3 are an OVF; on other CPUs two CYCs (the fused loop in ${wasm ? "WebAssembly" : "JavaScript"})`, async (t) => {
      useWasmMapLoop(wasm);
      t.after(() => useWasmMapLoop(true));
      // NOP, JMP RAX at 0x1000.
      const cwd = mkdtempSync(join(dir, "skd007-"));
      writeFileSync(join(cwd, "code.bin"), Uint8Array.from([0x90, 0xff, 0xe0]));
      const pkt = new Packet();
      const enc = start64(pkt);
      const bytes: number[] = [];
      const flush = () => {
        bytes.push(...enc.bytes());
        enc.reset();
      };
      for (let i = 0; i < 3; i++) enc.emitIp(PacketType.Tip, 0, 0x1000);
      flush();
      // CYC 07 02, then F3: the packet decoder takes 02 F3 as an OVF with SKD007.
      bytes.push(0x07, 0x02, 0xf3);
      // Where tracing resumes after the overflow (with SKD007), else an asynchronous branch.
      enc.emitIp(PacketType.Fup, 0, 0x1001);
      for (let i = 0; i < 3; i++) enc.emitIp(PacketType.Tip, 0, 0x1000);
      flush();
      writeFileSync(join(cwd, "trace.pt"), Uint8Array.from(bytes));
      const code = ["--raw", "code.bin:0x1000", "--pt", "trace.pt"];
      // Skylake (SKD007: an OVF, and the FUP after it says where tracing resumes; with
      // SKD010 too, which changes nothing where a FUP follows), Skylake-SP (no SKD007).
      for (const cpu of ["6/78", "6/85"]) {
        const { fast } = await compare(cwd, ["--cpu", cpu, ...code, "--quiet", "--stat:insn"]);
        assert.equal(fast?.status, 0, `--cpu ${cpu}: ${fast?.reason}`);
        // The flow decoders' listing: an overflow, or an interrupt (the FUP, then a TIP).
        const listing = (await flow(cwd, ["--cpu", cpu, ...code], true, "none")).stdout;
        assert.equal(listing.includes("[overflow]"), cpu === "6/78", listing);
      }
    });

  test("after an OVF the last IP is forgotten: a FUP compressed against the IP before it reads as the event decoder reads it", async () => {
    // NOP, JMP RAX at HIGH; each TIP goes back there.
    const HIGH = 0x7f00_0000_1000;
    const cwd = mkdtempSync(join(dir, "ovf-lastip-"));
    writeFileSync(join(cwd, "code.bin"), Uint8Array.from([0x90, 0xff, 0xe0]));
    const pkt = new Packet();
    const enc = new PacketEncoder();
    psb64(enc, pkt, 0x7f00);
    const tips = () => {
      for (let i = 0; i < 3; i++) enc.emitIp(PacketType.Tip, 0x7f00, 0x1000);
    };
    tips();
    pkt.clear().type = PacketType.Ovf;
    enc.emit(pkt);
    // (The encoder compresses it against the IP before the OVF: two bytes, 0x1001.)
    enc.emitIp(PacketType.Fup, 0x7f00, 0x1001);
    tips();
    writeFileSync(join(cwd, "trace.pt"), enc.bytes());
    const argv = ["--raw", `code.bin:0x${HIGH.toString(16)}`, "--pt", "trace.pt", "--quiet", "--stat:insn"];
    // The decoders resume at 0x1001, where no code is: the walk does not go on at HIGH + 1.
    const { fast } = await compare(cwd, argv);
    assert.equal(fast?.status, -1);
    assert.match((await flow(cwd, argv.slice(0, 4), true, "none")).stdout, /\[overflow\]/);
  });

  test("BDM70: a PSB+ whose FUP a TIP.PGE follows leaves tracing off, and the walk covers it", async () => {
    // NOP, JMP RAX at 0x1000; each TIP goes back there.
    const cwd = mkdtempSync(join(dir, "bdm70-"));
    writeFileSync(join(cwd, "code.bin"), Uint8Array.from([0x90, 0xff, 0xe0]));
    const pkt = new Packet();
    const enc = new PacketEncoder();
    for (let round = 0; round < 3; round++) {
      // PSB+ (MODE.Exec, FUP) while tracing is off, then TIP.PGE: the FUP is BDM70's.
      psb64(enc, pkt);
      enc.emitIp(PacketType.TipPge, 0, 0x1000);
      for (let i = 0; i < 4; i++) enc.emitIp(PacketType.Tip, 0, 0x1000);
      enc.emitIp(PacketType.TipPgd, 0, 0x1000);
    }
    writeFileSync(join(cwd, "trace.pt"), enc.bytes());
    const argv = ["--raw", "code.bin:0x1000", "--pt", "trace.pt", "--quiet", "--stat:insn"];
    // Broadwell has BDM70; without a CPU the PSB+ says tracing is on, and the decoders differ.
    const { fast } = await compare(cwd, ["--cpu", "6/61", ...argv]);
    assert.deepEqual(fast, { status: 0, reason: "" });
    const general = await flow(cwd, ["--cpu", "6/61", ...argv], true, "none");
    assert.equal(general.stdout, "insn: 30.\n");
  });
});

test("no MODE.Exec before tracing starts: the flow decoders decode 16-bit code, so the fast decode hands over", async () => {
  // 48 89 c0 c3: MOV RAX, RAX and RET in 64-bit code; DEC AX, MOV AX, AX and RET in
  // 16-bit code. The RET goes back to the start three times.
  const cwd = mkdtempSync(join(dir, "mode-"));
  writeFileSync(join(cwd, "code.bin"), Uint8Array.from([0x48, 0x89, 0xc0, 0xc3]));
  const enc = new PacketEncoder();
  const pkt = new Packet();
  pkt.type = PacketType.Psb;
  enc.emit(pkt);
  enc.emitIp(PacketType.Fup, 0, 0x1000);
  pkt.clear().type = PacketType.PsbEnd;
  enc.emit(pkt);
  for (let i = 0; i < 3; i++) enc.emitIp(PacketType.Tip, 0, 0x1000);
  writeFileSync(join(cwd, "trace.pt"), enc.bytes());
  const { fast } = await compare(cwd, [
    "--raw",
    "code.bin:0x1000",
    "--pt",
    "trace.pt",
    "--quiet",
    "--stat:insn",
  ]);
  assert.equal(fast?.status, -1);
  assert.equal(fast?.reason, Handover.Mode);
});

/** A trace that starts in 64-bit code at 0x1000 (see {@link psb64}), emitting with `pkt`. */
function start64(pkt: Packet): PacketEncoder {
  const enc = new PacketEncoder();
  psb64(enc, pkt);
  return enc;
}

/**
 * A PSB+ that says 64-bit code at 0x1000 (PSB, MODE.Exec, FUP, PSBEND) into `enc`,
 * emitting with `pkt`; `hi`: the address's high half.
 */
function psb64(enc: PacketEncoder, pkt: Packet, hi = 0): void {
  pkt.clear().type = PacketType.Psb;
  enc.emit(pkt);
  pkt.clear().type = PacketType.ModeExec;
  pkt.flags = Flag.CsL;
  enc.emit(pkt);
  enc.emitIp(PacketType.Fup, hi, 0x1000);
  pkt.clear().type = PacketType.PsbEnd;
  enc.emit(pkt);
}

// The fused loop in WebAssembly (analysis/wasm/map-loop.wat, the default) and in JavaScript (mapLoop).
for (const wasm of [true, false])
  describe(`the map's fused packet loop (${wasm ? "analysis/wasm/map-loop.wat" : "analysis/coverage-map-loop.ts"})`, () => {
    before(() => useWasmMapLoop(wasm));
    after(() => useWasmMapLoop(true));
    test("a trace read in small windows: packets split at every window edge give the map, tables, count and result of the whole trace in memory", () => {
      const image = new Image();
      assert.ok(image.addElf(parseElf(new Uint8Array(readFileSync(w.elfs[0]!.path)))) > 0);
      for (const trace of [w.trace, w.timingTrace]) {
        const bytes = new Uint8Array(readFileSync(trace));
        // The map alone, and the map with the tables of blocks and edges.
        for (const mapOnly of [true, false]) {
          const whole = new Coverage(undefined, mapOnly);
          const want = decodeCoverage(TraceBytes.of(bytes), new DecisionGraph(image), whole);
          assert.equal(want.status, 0, want.reason);
          // TIPs of up to 9 bytes and CYCs with extension bytes straddle edges of 5-byte windows.
          for (const window of [5, 61, 4096]) {
            const source = { size: bytes.length, read: (at: number, n: number) => bytes.slice(at, at + n) };
            const cov = new Coverage(undefined, mapOnly);
            const got = decodeCoverage(TraceBytes.read(source, window), new DecisionGraph(image), cov);
            assert.equal(got.status, 0, `${window}-byte windows: ${got.reason}`);
            assert.equal(got.insns, want.insns, `${window}-byte windows`);
            assert.ok(
              Buffer.from(cov.aflMap).equals(Buffer.from(whole.aflMap)),
              `${window}-byte windows: the map`,
            );
            if (!mapOnly)
              assert.deepEqual(coverageJson(cov), coverageJson(whole), `${window}-byte windows: the tables`);
          }
        }
      }
    });

    test("runs of 4, 4,095 and 6,001 instructions (the loop keeps counts up to 4,094 with a node's kind and map location): the general decode's count and map", async () => {
      // NOPs and a JMP RAX at three places; TIPs go round them.
      const cwd = mkdtempSync(join(dir, "runs-"));
      const places: [number, number][] = [
        [0x1000, 3],
        [0x10000, 4094],
        [0x20000, 6000],
      ];
      const raw: string[] = [];
      for (const [k, [lo, nops]] of places.entries()) {
        const code = new Uint8Array(nops + 2).fill(0x90);
        code.set([0xff, 0xe0], nops);
        writeFileSync(join(cwd, `run${k}.bin`), code);
        raw.push("--raw", `run${k}.bin:${hex(0, lo)}`);
      }
      const pkt = new Packet();
      const enc = start64(pkt);
      for (let round = 0; round < 4; round++)
        for (const to of [0x10000, 0x20000, 0x1000, 0x20000, 0x10000, 0x1000])
          enc.emitIp(PacketType.Tip, 0, to);
      writeFileSync(join(cwd, "trace.pt"), enc.bytes());
      const { fast, lit } = await compare(cwd, [...raw, "--pt", "trace.pt", "--quiet", "--stat:insn"]);
      assert.deepEqual(fast, { status: 0, reason: "" });
      assert.ok(lit >= 3, `${lit} map bytes set`);
    });

    test("TIPs of every IPBytes (16, 32, 48 bits sign-extended and not, 64) between timing packets and PADs: the general decode's map, and decoded fast", async () => {
      // An indirect jump (JMP RAX) at each of five places: low, upper user and kernel addresses.
      const cwd = mkdtempSync(join(dir, "ipc-"));
      writeFileSync(join(cwd, "jmp.bin"), Uint8Array.from([0xff, 0xe0]));
      const places: [number, number][] = [
        [0, 0x1000],
        [0x7f00, 0x2000],
        [0x7f00, 0x2010],
        [0x7f00, 0x3020],
        [0xffff8000, 0x4000],
      ];
      const pkt = new Packet();
      const enc = start64(pkt);
      const tip = (ipc: number, hi: number, lo: number) => {
        pkt.clear().type = PacketType.Tip;
        pkt.a = ipc;
        pkt.hi = hi;
        pkt.lo = lo;
        enc.emit(pkt);
      };
      for (let round = 0; round < 3; round++) {
        tip(6, 0x7f00, 0x2000); // 64 bits: 0x7f0000002000
        tip(2, 0, 0x2010); // the low 32 bits
        tip(1, 0, 0x3020); // the low 16 bits (0x2010 -> 0x3020 keeps 0x0000 above them)
        pkt.clear().type = PacketType.Pad;
        enc.emit(pkt);
        pkt.clear().type = PacketType.Mtc;
        pkt.a = 7;
        enc.emit(pkt);
        tip(3, 0x8000, 0x4000); // 48 bits sign-extended: 0xffff800000004000
        pkt.clear().type = PacketType.Cyc;
        pkt.lo = 0x12345; // with extension bytes
        enc.emit(pkt);
        tip(3, 0, 0x1000); // 48 bits, bit 47 clear: 0x1000
        tip(4, 0x7f00, 0x2000); // 48 bits, the upper 16 kept (0): 0x7f0000002000
        tip(6, 0, 0x1000);
      }
      writeFileSync(join(cwd, "trace.pt"), enc.bytes());
      const raw = places.flatMap(([hi, lo]) => ["--raw", `jmp.bin:${hex(hi, lo)}`]);
      const { fast, lit } = await compare(cwd, [...raw, "--pt", "trace.pt", "--quiet", "--stat:insn"]);
      assert.deepEqual(fast, { status: 0, reason: "" });
      // Seven places control goes to from another, one or more map bytes each.
      assert.ok(lit >= 7, `${lit} map bytes set`);
    });

    test("returns by TIP where the loop's guess (the node after the latest call) holds and where it does not: skipped frames, compressed returns between, recursion past 64 calls", async () => {
      const cwd = mkdtempSync(join(dir, "returns-"));
      const code: [number, number[]][] = [
        [0x1000, [0xff, 0xd0, 0xff, 0xe0]], // call rax; jmp rax
        [0x2000, [0xe8, 0xfb, 0x0f, 0x00, 0x00, 0xc3]], // call 0x3000; ret
        [0x3000, [0xc3]], // ret
        [0x4000, [0xff, 0xd0, 0xc3]], // call rax; ret
      ];
      const raw = code.flatMap(([lo, bytes], k) => {
        writeFileSync(join(cwd, `code${k}.bin`), Uint8Array.from(bytes));
        return ["--raw", `code${k}.bin:${hex(0, lo)}`];
      });
      const pkt = new Packet();
      const enc = start64(pkt);
      const tip = (lo: number) => enc.emitIp(PacketType.Tip, 0, lo);
      const taken = () => {
        pkt.clear().type = PacketType.Tnt8;
        pkt.a = 1;
        pkt.lo = 1;
        enc.emit(pkt);
      };
      for (let round = 0; round < 3; round++) {
        // Returns where the guess holds: 0x3000 to 0x2005, 0x2005 to 0x1002.
        tip(0x2000);
        tip(0x2005);
        tip(0x1002);
        tip(0x1000);
        // 0x3000 returns past 0x2005's frame, to 0x1002.
        tip(0x2000);
        tip(0x1002);
        tip(0x1000);
        // A compressed return (0x3000 to 0x2005), then one by TIP.
        tip(0x2000);
        taken();
        tip(0x1002);
        tip(0x1000);
        // 100 calls deep at 0x4000, and back: the ring of guesses holds the latest 64.
        tip(0x4000);
        for (let k = 0; k < 100; k++) tip(0x4000);
        for (let k = 0; k < 100; k++) tip(0x4002);
        tip(0x1002);
        tip(0x1000);
      }
      writeFileSync(join(cwd, "trace.pt"), enc.bytes());
      const { fast, lit } = await compare(cwd, [...raw, "--pt", "trace.pt", "--quiet", "--stat:insn"]);
      assert.deepEqual(fast, { status: 0, reason: "" });
      assert.ok(lit >= 6, `${lit} map bytes set`);
    });
  });

test("blocks and edges past the tables' limit: the fast decode (which keeps table ids a node) drops and counts what the instruction decoder's does", () => {
  const image = new Image();
  assert.ok(image.addElf(parseElf(new Uint8Array(readFileSync(w.elfs[0]!.path)))) > 0);
  for (const trace of [w.trace, w.timingTrace]) {
    const bytes = new Uint8Array(readFileSync(trace));
    for (const limit of [40, 1 << 21]) {
      const fast = new Coverage(limit);
      const got = decodeCoverage(TraceBytes.of(bytes), new DecisionGraph(image), fast);
      assert.equal(got.status, 0, got.reason);
      const general = new Coverage(limit);
      const analysis = new CallAnalysis({ sinks: [], coverage: general });
      const feed = analysis.stream("general");
      const status = drive(new InsnDecoder(bytes, { image }), new Insn(), {
        record: (insn) => feed.insnRecord(insn),
        event: (ev) => feed.event(ev),
        error: (code, offset) => feed.error(offset, errorMessage(code)),
      });
      assert.equal(status, -ErrorCode.Eos);
      analysis.finish();
      const want = coverageJson(general);
      assert.deepEqual(coverageJson(fast), want, `limit ${limit}`);
      if (limit === 40) {
        assert.equal(want.blocks.length, 40);
        assert.ok(want.dropped.blocks > 0 && want.dropped.edges > 0, JSON.stringify(want.dropped));
      } else assert.deepEqual(want.dropped, { blocks: 0, edges: 0 });
    }
  }
});
