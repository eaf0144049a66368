/**
 * `ptkit perf` runs the block decoder for every output that prints no instruction
 * (--branches, --calls, -q, JSON Lines without instructions, the analysis files):
 * each is byte for byte what the instruction decoder (--insn-decoder) gives, stdout,
 * stderr, exit code and files alike, on the HASE and quipper captures and on
 * kernel-traced generated files (processes switched by CR3 through an interrupt and
 * IRETQ, with and without the kernel's binary, in small trace windows, cut by
 * --time-range and --tid).
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { type PerfInternals, runPerf } from "../../src/cli/perf/perf.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbols, PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import {
  CODE_CALLS,
  CODE_LOOP,
  CODE_SWITCH,
  callTurns,
  insn,
  loopTurns,
  SWITCH_KERNEL,
  switchTo,
  traceOf,
} from "./pt-file.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-decoders-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const FILES = ["folded.txt", "timeline.json", "coverage.json", "afl.bin"].map((f) => join(dir, f));
const FILE_ARGS = ["--folded", "--timeline", "--coverage", "--afl-map"].flatMap((o, k) => [o, FILES[k]!]);

/** Every output that prints no instruction. */
const MODES: string[][] = [
  ["--branches"],
  ["--branches", "--sym"],
  ["--calls"],
  ["--calls", "--sym"],
  ["--jsonl", "--branches", "--sym"],
  ["--jsonl", "--calls"],
  ["-q"],
  ["--jsonl", "-q"],
  ["-q", ...FILE_ARGS],
  ["--branches", "--folded-weight", "time", ...FILE_ARGS],
  // Call stacks alone (no coverage, nothing per instruction): the block decoder's
  // blocks then feed the analysis without being walked again.
  ["-q", ...FILE_ARGS.slice(0, 4)],
  ["--calls", "--folded-weight", "time", ...FILE_ARGS.slice(0, 2)],
];

interface Run {
  code: number;
  out: string;
  err: string;
  files: (Buffer | undefined)[];
}

function run(cwd: string, args: string[], internal: PerfInternals): Run {
  for (const f of FILES) rmSync(f, { force: true });
  const io = captureIo(cwd);
  const code = runPerf(args, io, "/nonexistent-home", internal);
  const files = FILES.map((f) => (existsSync(f) ? readFileSync(f) : undefined));
  return { code, out: io.out.join(""), err: io.err.join(""), files };
}

/**
 * Every mode with `args` (options and the file), with the block decoder and the
 * instruction decoder: the same. Returns the instruction decoder's runs, by mode.
 */
function assertSame(cwd: string, args: string[], internal: PerfInternals = {}): Run[] {
  return MODES.map((mode) => {
    const blocks = run(cwd, [...mode, ...args], internal);
    const insns = run(cwd, ["--insn-decoder", ...mode, ...args], internal);
    const what = mode.filter((a) => !FILES.includes(a)).join(" ");
    assert.equal(blocks.out, insns.out, `${what}: stdout`);
    assert.equal(blocks.err, insns.err, `${what}: stderr`);
    assert.equal(blocks.code, insns.code, `${what}: exit code`);
    FILES.forEach((f, k) => {
      assert.ok(
        blocks.files[k] === insns.files[k] || blocks.files[k]?.equals(insns.files[k]!),
        `${what}: ${f} differs`,
      );
    });
    return insns;
  });
}

const branchLines = (r: Run) => r.out.split("\n").filter((l) => l.includes(" => "));

const HASE = "real/hase";
const BIN_0515 = (run: string, prog: string) =>
  `2018-05/${run}/binaries/home/joerg/git/hase/tests/bin/${prog}/${prog}`;
const HASE_CASES = [
  ["2018-04-04/control_flow/control_flow-20180404T163033.perf", "2018-04-04/control_flow/control_flow"],
  ["2018-04-04/loopy/loopy-20180404T162955.perf", "2018-04-04/loopy/loopy"],
  [
    "2018-05/control_flow-20180515T180451/perf.data.1",
    BIN_0515("control_flow-20180515T180451", "control_flow"),
  ],
  ["2018-05/loopy-20180514T145114/perf.data.1", BIN_0515("loopy-20180514T145114", "loopy")],
] as const;

describe("the block decoder's outputs are the instruction decoder's: HASE captures", () => {
  for (const [perfData, elf] of HASE_CASES) {
    test(perfData, { skip: skipUnlessCorpus(HASE, perfData) }, () => {
      const runs = assertSame(corpusPath(HASE)!, ["--elf", elf, perfData]);
      assert.equal(runs[0]!.code, 0, runs[0]!.err);
      // What the comparison is about: taken branches of every kind (calls: control_flow), stacks.
      const flags = new Set(branchLines(runs[0]!).map((l) => l.slice(2, 25).trim()));
      const want = perfData.includes("control_flow") ? ["call", "return", "jmp"] : ["tr end  syscall"];
      for (const f of ["jcc", "tr strt", ...want]) assert.ok(flags.has(f), `${f} in ${[...flags]}`);
      assert.ok(runs[8]!.files[0]!.length > 0, "folded stacks");
    });
  }
});

const QUIPPER = "real/quipper-perf-data";

describe("the block decoder's outputs are the instruction decoder's: quipper captures", () => {
  for (const file of ["perf.data.intel_pt-4.14", "perf.data.piped.intel_pt-4.14"]) {
    test(`${file} (two CPUs, no binaries)`, { skip: skipUnlessCorpus(QUIPPER, file) }, () => {
      const runs = assertSame(corpusPath(QUIPPER)!, [file]);
      assert.equal(runs[0]!.code, 0, runs[0]!.err);
      assert.match(runs[0]!.err, /no binary for/);
    });
  }
});

/**
 * Processes A (a loop of calls) and B (a counting loop) take turns on CPU 0 by CR3
 * alone (an interrupt into the kernel, MOV CR3, IRETQ), many times.
 */
const BASE = 0x400000n;
function switchingFile(): string {
  const exec = [JSON.stringify({ k: "cpl", cpl: 3 }), JSON.stringify({ k: "cr3", cr3: "0xa000" })];
  exec.push(insn(BASE, 5));
  for (let turn = 0; turn < 12; turn++) {
    exec.push(...callTurns(BASE, 300 + 37 * turn), ...switchTo(BASE + 5n, "0xb000"));
    exec.push(...loopTurns(BASE, 500 + 11 * turn), ...switchTo(BASE, "0xa000"));
  }
  exec.push(JSON.stringify({ k: "end", ip: `0x${(BASE + 5n).toString(16)}` }));
  const f = new PtFile()
    .comm(100, "a", TRACE_TSC - 100n)
    .comm(200, "b", TRACE_TSC - 90n)
    .mmap2(100, BASE, 0x1000n, 0n, "/bin/a", TRACE_TSC - 50n)
    .mmap2(200, BASE, 0x1000n, 0n, "/bin/b", TRACE_TSC - 40n)
    .itraceStart(100, 100, TRACE_TSC - 10n)
    .trace(traceOf(exec));
  writeFileSync(
    join(dir, "a"),
    elfWithSymbols(BASE, CODE_CALLS, [
      { name: "main", value: BASE, size: 16 },
      { name: "f", value: BASE + 0x10n, size: 1 },
    ]),
  );
  writeFileSync(join(dir, "b"), elfWithSymbols(BASE, CODE_LOOP, [{ name: "spin", value: BASE, size: 5 }]));
  writeFileSync(
    join(dir, "vmlinux"),
    elfWithSymbols(SWITCH_KERNEL, CODE_SWITCH, [{ name: "sw", value: SWITCH_KERNEL, size: 5 }]),
  );
  writeFileSync(join(dir, "switching.data"), fileMode(f.built()));
  return "switching.data";
}

describe("the block decoder's outputs are the instruction decoder's: kernel-traced generated files", () => {
  const file = switchingFile();
  const images = ["--elf", "a", "--elf", "b"];

  test("with the kernel", () => {
    const runs = assertSame(dir, [...images, "--vmlinux", "vmlinux", file]);
    assert.equal(runs[0]!.code, 0, runs[0]!.err);
    const flags = new Set(branchLines(runs[0]!).map((l) => l.slice(2, 25).trim()));
    for (const f of ["call", "return", "jcc", "iret"]) assert.ok(flags.has(f), `${f} in ${[...flags]}`);
    assert.ok(
      runs[0]!.out.includes("[cpu 0 pid 200 tid 200]") || runs[4]!.out.includes('"pid":200'),
      "B ran",
    );
  });

  test("without the kernel (its addresses are charged to it)", () => {
    const runs = assertSame(dir, [...images, file]);
    assert.match(runs[0]!.err, /no binary for \[kernel\]/);
  });

  test("in small trace windows (seams between them)", () => {
    assertSame(dir, [...images, "--vmlinux", "vmlinux", file], { windowSize: 1024 });
  });

  test("cut by --time-range and --tid", () => {
    const jsonl = run(dir, ["--jsonl", "--branches", ...images, "--vmlinux", "vmlinux", file], {});
    const tscs = jsonl.out
      .split("\n")
      .filter((l) => l.startsWith('{"type":"branch"'))
      .map((l) => BigInt((JSON.parse(l) as { tsc: string }).tsc));
    assert.ok(tscs.length > 1000);
    const from = tscs[Math.floor(tscs.length / 3)]!;
    const to = tscs[Math.floor((2 * tscs.length) / 3)]!;
    assertSame(dir, ["--time-range", `${from},${to}`, ...images, "--vmlinux", "vmlinux", file]);
    assertSame(dir, ["--tid", "200", ...images, "--vmlinux", "vmlinux", file]);
  });
});
