/**
 * `ptkit perf` with perf script's options (-i, --itrace, -F, --call-trace,
 * --call-ret-trace, the filters): the options' parsing, and the exact lines perf
 * script 6.1 prints on a generated perf.data (a loop calling f) and on the HASE
 * captures, checked against Debian's perf where it is installed. Besides: an unknown
 * option is reported as perf reports it (exit 129).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { runPerf } from "../../src/cli/perf/perf.js";
import { parseElf } from "../../src/image/index.js";
import { decodeInsn, ExecMode, InsnClass, InsnInfo } from "../../src/isa/index.js";
import {
  parseFields,
  parseItrace,
  parseList,
  takePerfScriptOptions,
} from "../../src/session/perf-script-options.js";
import { readExecJsonl } from "../../src/unit/exec/jsonl.js";
import { generate } from "../../src/unit/gen/index.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbolsLayout, PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { BRANCHES, msrs } from "../unit/gen/helpers.js";
import { EMPTY_HOME } from "./home.js";
import { insn, loopProgram, traceOf } from "./pt-file.js";
import { okOut, perfScriptRun, ptkitPerfRun } from "./script-runs.js";

const perf = spawnSync("perf", ["version"], { encoding: "utf8" });
const noPerf = perf.status === 0 ? false : "perf is not installed: compared with the expected lines only";
const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-script-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const BASE = 0x400000n;

/**
 * A perfScript perf.data of `turns` turns of loopProgram (main; f at +0x10) run by pid
 * 100 "prog" on CPU 2; `extra`: IA32_RTIT_CTL fields of the trace (traceOf's: TSC, MTC, CYC).
 */
function loopData(turns: number, extra: Record<string, number> = {}, name = `loop${turns}`): string {
  const { code, exec } = loopProgram(BASE, turns);
  const elf = elfWithSymbolsLayout(BASE, code, [
    { name: "main", value: BASE, size: 0x10 },
    { name: "f", value: BASE + 0x10n, size: 1 },
  ]);
  const prog = join(dir, `${name}.elf`);
  writeFileSync(prog, elf.bytes);
  const file = new PtFile({ perfScript: true })
    .comm(100, "prog", TRACE_TSC - 100n, 2)
    .mmap2(100, BASE, 0x1000n, BigInt(elf.segOffsets[0]!), prog, TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n, 2)
    .trace(traceOf(exec, extra), 2);
  const data = join(dir, `${name}.data`);
  writeFileSync(data, fileMode(file.built()));
  return data;
}

const ptkit = (args: string[], cwd = dir) => ptkitPerfRun(args, cwd);
const ok = (args: string[], cwd = dir) => okOut(ptkitPerfRun(args, cwd));
/** perf script's output. */
const perfScript = (args: string[], cwd = dir) => okOut(perfScriptRun(args, cwd), "perf script");

describe("perf script's options", () => {
  test("--itrace letters and periods", () => {
    const dflt = parseItrace(undefined);
    assert.ok(typeof dflt !== "string");
    // perf script 6.1 without --itrace: calls (c), errors, power events, transactions, ptwrite.
    assert.deepEqual(
      [dflt.insn, dflt.branches, dflt.allBranches, dflt.calls, dflt.returns, dflt.errors, dflt.power],
      [false, true, false, true, false, true, true],
    );
    const i = parseItrace("i100000ibe");
    assert.ok(typeof i !== "string");
    assert.deepEqual([i.insn, i.period, i.allBranches, i.errors], [true, 100000, true, true]);
    const zero = parseItrace("i0ns");
    assert.ok(typeof zero !== "string" && zero.period === 1 && zero.periodUnit === "i");
    // Periods in time, as perf reads them: a bare i is 100us, a number without a unit ns.
    const time = (t: string) => {
      const it = parseItrace(t);
      assert.ok(typeof it !== "string", it as string);
      return [it.period, it.periodUnit];
    };
    assert.deepEqual(time("i"), [100_000, "ns"]);
    assert.deepEqual(time("i100us"), [100_000, "ns"]);
    assert.deepEqual(time("i1msb"), [1_000_000, "ns"]);
    assert.deepEqual(time("i100"), [100, "ns"]);
    assert.deepEqual(time("i64t"), [64, "t"]);
    assert.match(parseItrace("i100b") as string, /--itrace=i100b: the period 100 wants a unit/);
    const skip = parseItrace("crs25");
    assert.ok(
      typeof skip !== "string" && skip.skip === 25 && skip.calls && skip.returns && !skip.allBranches,
    );
    assert.match(parseItrace("bk") as string, /unknown or unsupported letter 'k'/);
    const notes = parseItrace("bdg16l");
    assert.ok(typeof notes !== "string");
    assert.equal(notes.notes.length, 3);
  });

  test("-F lists, +field/-field changes and hw:/synth: prefixes", () => {
    const start = {
      hw: new Set(["comm", "ip"] as const),
      sw: new Set(["comm", "ip"] as const),
      synth: new Set(["comm"] as const),
      named: { hw: new Set<never>(), sw: new Set<never>() },
      user: false,
      noAddr: false,
    };
    const set = parseFields(["tid,ip,sym"], start);
    assert.ok(typeof set !== "string");
    assert.deepEqual([...set.hw], ["tid", "ip", "sym"]);
    assert.equal(set.user, true);
    const change = parseFields(["-comm,+flags,callindent"], start);
    assert.ok(typeof change !== "string");
    assert.deepEqual([...change.hw].sort(), ["callindent", "flags", "ip"]);
    assert.equal(change.user, false);
    const hw = parseFields(["hw:ip"], start);
    assert.ok(typeof hw !== "string");
    assert.deepEqual([[...hw.hw], [...hw.synth]], [["ip"], ["comm"]]);
    assert.match(parseFields(["ip,bogus"], start) as string, /invalid field 'bogus'/);
    // sw: is the software events' own set; a list for it leaves the Intel PT samples' defaults (addr shown).
    const sw = parseFields(["sw:tid,ip"], start);
    assert.ok(typeof sw !== "string");
    assert.deepEqual(
      [[...sw.hw], [...sw.sw], [...sw.named.sw], sw.user],
      [["comm", "ip"], ["tid", "ip"], ["tid", "ip"], false],
    );
    // A plain list is every kind's, and names its fields (perf refuses those the samples lack).
    const all = parseFields(["tid,cpu"], start);
    assert.ok(typeof all !== "string");
    assert.deepEqual(
      [[...all.sw], [...all.named.hw], [...all.named.sw]],
      [
        ["tid", "cpu"],
        ["tid", "cpu"],
        ["tid", "cpu"],
      ],
    );
    assert.match(takePerfScriptOptions(["-F", "-sym"]) as string, /symoff without sym/);
  });

  test("CPU and thread lists; options taken out of the arguments", () => {
    assert.deepEqual(parseList("-C", "0,2-4"), [0, 2, 3, 4]);
    assert.match(parseList("-C", "1-x") as string, /-C: bad list/);
    const t = takePerfScriptOptions([
      "-i",
      "a.data",
      "-Fip,addr",
      "--cpu",
      "3",
      "--tid",
      "1,2",
      "--time",
      "5,6.5",
      "--x",
    ]);
    assert.ok(typeof t !== "string");
    // A single --cpu stays ptkit's own option; lists are perf's.
    assert.deepEqual(t.rest, ["--cpu", "3", "--x"]);
    assert.equal(t.options.input, "a.data");
    assert.deepEqual(t.options.tids, [1, 2]);
    assert.deepEqual(t.options.time, ["5.0", "6.5"]);
    assert.equal(t.options.active, true);
  });

  test("an unknown option: perf's message and usage, exit 129", () => {
    const long = ptkit(["--bogus", "x.data"]);
    assert.equal(long.status, 129);
    assert.match(long.err, /^ {2}Error: unknown option `bogus'\n\n Usage: ptkit perf/);
    const short = ptkit(["-Q", "x.data"]);
    assert.equal(short.status, 129);
    assert.match(short.err, /^ {2}Error: unknown switch `Q'\n/);
  });

  test("what ptkit cannot print is said in a note, and errors name perf's option", () => {
    const data = loopData(1);
    const r = ptkit(["-i", data, "--itrace=c", "-F", "sym,srcline"]);
    assert.equal(r.status, 1);
    assert.match(r.err, /-F: srcline without ip/);
    assert.doesNotMatch(ptkit(["-i", data, "--itrace=c", "-F", "ip,insn"]).err, /note: -F insn/);
    const t = ptkit(["-i", data, "--time", "9,1"]);
    assert.equal(t.status, 1);
    assert.match(t.err, /^ptkit perf: --time: 9\.0 is after 1\.0/);
    assert.match(ptkit(["-i", data, "-F", ",,"]).err, /-F ,,: no fields given/);
  });

  test("no file: ./perf.data, as perf script reads", () => {
    const r = ptkit([]);
    assert.equal(r.status, 1);
    assert.match(r.err, /perf\.data/);
  });
});

describe("perf script's lines on a generated perf.data", () => {
  const data = loopData(3);
  /** A line of -F tid,ip,sym,symoff,addr,flags. */
  const line = (flags: string, from: bigint, to: bigint, fromSym: string, toSym: string) =>
    `  100   ${flags.padEnd(22)} ${from.toString(16).padStart(16)} ${fromSym} => ${to.toString(16).padStart(16)} ${toSym}\n`;

  test("--itrace=cr -F tid,ip,sym,symoff,addr,flags", () => {
    const out = ok(["-i", data, "--itrace=cr", "-F", "tid,ip,sym,symoff,addr,flags"]);
    const turn =
      line("call", BASE + 5n, BASE + 0x10n, "main+0x5", "f+0x0") +
      line("return", BASE + 0x10n, BASE + 0xan, "f+0x0", "main+0xa");
    // Tracing ends at the hlt (the generator's end: a FUP and TIP.PGD).
    const end = line("tr end  async", BASE + 0xen, 0n, "main+0xe", "[unknown]");
    assert.equal(out, turn.repeat(3) + end);
    if (!noPerf)
      assert.equal(out, perfScript(["-i", data, "--itrace=cr", "-F", "tid,ip,sym,symoff,addr,flags"]));
  });

  test("--itrace=i5i -F tid,time,ip,sym --ns: every 5th instruction", () => {
    const out = ok([data, "--itrace=i5i", "-F", "tid,time,ip,sym,insnlen", "--ns"]);
    const lines = out.split("\n").filter((l) => l !== "");
    // mov, then call, ret, dec, jnz per turn: the 5th is the first jnz, the 10th the third call.
    assert.equal(lines.length, 2);
    assert.match(lines[0]!, /^ {2}100 {4}\d+\.\d{9}: {12}40000c main ilen: 2$/);
    assert.match(lines[1]!, /^ {2}100 {4}\d+\.\d{9}: {12}400005 main ilen: 5$/);
    if (!noPerf)
      assert.equal(out, perfScript(["-i", data, "--itrace=i5i", "-F", "tid,time,ip,sym,insnlen", "--ns"]));
  });

  test("--call-ret-trace: flags, (dso), the call depth and names", () => {
    const out = ok(["-i", data, "--call-ret-trace"]);
    const lines = out.split("\n").filter((l) => l !== "");
    assert.equal(lines.length, 9);
    const body = lines.map((l) => l.slice(l.indexOf(": ") + 2));
    // The PSB+ at the start: its offset, and the core:bus ratio (37 of 37 at a TSC of 1 GHz).
    assert.equal(body[0], `${" ".repeat(24)} psb offs: 0${" ".repeat(22)}`);
    assert.equal(body[1], `${" ".repeat(24)} cbr: 37 freq: 1000 MHz (100%)    `);
    body.splice(0, 2);
    const elf = join(dir, "loop3.elf");
    // Calls one deeper, f's name padded to 32 columns; the return at the depth of its call.
    assert.equal(body[0], `  call                  (${elf})\t    f${" ".repeat(27)}`);
    assert.equal(body[1], `  return                (${elf})\t    f${" ".repeat(27)}`);
    assert.equal(body[6], `  tr end  async         (${elf})\tmain${" ".repeat(28)}`);
    assert.match(lines[0]!, /^ {12}prog {3}100 \[002\] +\d+\.\d{9}: /);
    if (!noPerf) assert.equal(out, perfScript(["-i", data, "--call-ret-trace"]));
    if (!noPerf) assert.equal(ok(["-i", data, "--call-trace"]), perfScript(["-i", data, "--call-trace"]));
  });

  test("default fields (no -F, no --itrace): comm, tid, cpu, time, period, event, ip and addr with names", () => {
    const out = ok(["-i", data]);
    const [psb, cbr, first] = out.split("\n");
    assert.match(
      psb!,
      /^ {12}prog {3}100 \[002\] +\d+\.\d{6}: {18}psb: {2}psb offs: 0 {33}400000 main\+0x0 \(.*loop3\.elf\)$/,
    );
    assert.match(
      cbr!,
      /^ {12}prog {3}100 \[002\] +\d+\.\d{6}: {18}cbr: {2}cbr: 37 freq: 1000 MHz \(100%\) {15}400000 /,
    );
    assert.match(
      first!,
      /^ {12}prog {3}100 \[002\] +\d+\.\d{6}: {10}1 {10}branches:HG: {12}400005 main\+0x5 \(.*loop3\.elf\) => {11}400010 f\+0x0 \(.*loop3\.elf\)$/,
    );
    if (!noPerf) assert.equal(out, perfScript(["-i", data]));
  });

  test("filters: --pid, --tid and --comm lists, -C", () => {
    const all = ok(["-i", data, "--itrace=cr", "-F", "ip,addr,flags"]);
    assert.equal(all.split("\n").length - 1, 7);
    assert.equal(ok(["-i", data, "--itrace=cr", "-F", "ip,addr,flags", "--pid", "1,100"]), all);
    assert.equal(ok(["-i", data, "--itrace=cr", "-F", "ip,addr,flags", "--comm", "prog"]), all);
    assert.equal(ok(["-i", data, "--itrace=cr", "-F", "ip,addr,flags", "--tid", "7,8"]), "");
    assert.equal(ok(["-i", data, "--itrace=cr", "-F", "ip,addr,flags", "--comm", "other"]), "");
    assert.equal(ok(["-i", data, "--itrace=cr", "-F", "ip,addr,flags", "-C", "1-2"]), all);
    const r = ptkit(["-i", data, "--itrace=cr", "-C", "0,1"]);
    assert.equal(r.status, 1);
    assert.match(r.err, /cpu 0/i);
  });
});

describe("instruction samples by time (--itrace=i<period> in t, ns, us, ms)", () => {
  // TSC and MTC (no CYC): 3 cycles an instruction, a TSC tick a cycle (the generator's
  // 1 GHz TSC); 3000 turns: 12,001 instructions over about 36 us.
  const data = loopData(3000, { CYCEn: 0 }, "mtc3000");
  const lines = (out: string) => out.split("\n").filter((l) => l !== "");

  test("i0ns and i1t: every instruction; longer periods: fewer samples, periods adding up", () => {
    const every = lines(ok(["-i", data, "--itrace=i0ns", "-F", "ip,period"]));
    assert.equal(every.length, 12_001);
    assert.ok(every.every((l) => /^ {9}1 /.test(l)));
    let last = 0;
    for (const period of ["i16t", "i100t", "i1us", "i10us"]) {
      const out = ok(["-i", data, `--itrace=${period}`, "-F", "ip,sym,period"]);
      const samples = lines(out).map((l) => Number(l.trim().split(/\s+/)[0]));
      // A sample every P ticks (the period rounded down to a power of two) of perf's
      // clock: the last timestamp plus a tick an instruction, while an instruction
      // takes 3 ticks: from P/3 to P instructions a sample.
      const ticks = { i16t: 16, i100t: 64, i1us: 512, i10us: 8192 }[period]!;
      const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
      assert.ok(mean >= ticks / 3 - 1 && mean <= ticks + 1, `${period}: ${mean} instructions a sample`);
      assert.ok(samples.reduce((a, b) => a + b, 0) <= 12_001);
      assert.ok(last === 0 || samples.length < last, period);
      last = samples.length;
      if (!noPerf)
        assert.equal(out, perfScript(["-i", data, `--itrace=${period}`, "-F", "ip,sym,period"]), period);
    }
  });

  test("the sample's time: the stream's (TSC only)", () => {
    const tscOnly = loopData(3000, { CYCEn: 0, MTCEn: 0 }, "tsc3000");
    const args = ["-i", tscOnly, "--itrace=i1us", "-F", "tid,time,ip,sym,period", "--ns"];
    const out = ok(args);
    assert.ok(lines(out).length > 10);
    if (!noPerf) assert.equal(out, perfScript(args));
  });

  test("a bare i is perf's 100us: none in a 36 us run", () => {
    assert.equal(ok(["-i", data, "--itrace=i", "-F", "ip"]), "");
  });
});

describe("the times perf gives branches and PSBs (TSC, MTC and CYC)", () => {
  // 12,000 turns of the loop timed by CYC: RET compression packs each turn's ret and
  // jnz into TNTs, a CYC before each packet, a PSB+ every 2 KiB (a few in all).
  const turns = 12_000;
  const data = loopData(turns, {}, "cyc12000");
  const args = ["-i", data, "--itrace=bp", "-F", "time,ip,addr,flags,synth", "--ns"];
  const rows = () =>
    ok(args)
      .split("\n")
      // Branches and PSBs (not the CBR line).
      .filter((l) => l.includes("=>") || l.includes("psb offs"))
      .map((l) => {
        const t = l.trim().split(/\s+/);
        const psb = t[1] === "psb";
        return {
          l,
          time: t[0]!,
          call: t[1] === "call",
          psb,
          from: psb ? -1n : BigInt(`0x${t.at(-3)}`),
          to: BigInt(`0x${t.at(-1)}`),
        };
      });

  test("a direct call has the time of the line before it (the branch that took the last packet, or the PSB)", () => {
    const r = rows();
    const calls = r.filter((x) => x.call).length;
    assert.equal(calls, turns);
    for (let i = 1; i < r.length; i++) if (r[i]!.call) assert.equal(r[i]!.time, r[i - 1]!.time, r[i]!.l);
    // (perf's sample time moves only where a packet is taken: the time right after a
    // TNT, read ahead to by the decoder, is not the time of the branch before it.)
  });

  test("a PSB shows where the decode reaches its FUP's IP: after the branch there, before the next", () => {
    const r = rows();
    const psbs = r.map((x, i) => (x.psb ? i : -1)).filter((i) => i > 0);
    assert.ok(psbs.length >= 3, `${psbs.length} PSBs`);
    for (const i of psbs) {
      const ip = r[i]!.to;
      // The loop's code between a branch's target and the next branch is straight.
      assert.ok(
        r[i - 1]!.to <= ip && ip <= r[i + 1]!.from,
        r
          .slice(i - 1, i + 2)
          .map((x) => x.l)
          .join("\n"),
      );
    }
  });

  test("an instruction sample at a branch that takes a packet has that packet's time, as the branch's sample", () => {
    const times = (args: string[], keep: (l: string) => boolean) =>
      ok(["-i", data, ...args, "--ns"])
        .split("\n")
        .filter(keep)
        .map((l) => l.trim().split(/\s+/)[0]);
    // Each turn's ret (at 400010, RET-compressed: a TNT bit) against its return line.
    const rets = times(["--itrace=i1i", "-F", "time,ip"], (l) => l.endsWith(" 400010"));
    const returns = times(["--itrace=b", "-F", "time,ip,addr,flags"], (l) => l.includes(" return "));
    assert.equal(rets.length, turns);
    assert.deepEqual(rets, returns);
  });

  test("perf script's lines: --itrace=bp, --call-trace, --call-ret-trace, the default", {
    skip: noPerf,
  }, () => {
    const i5 = ["-i", data, "--itrace=i5i", "-F", "time,ip,period", "--ns"];
    assert.equal(ok(i5), perfScript(i5));
    assert.equal(ok(args), perfScript(args));
    for (const extra of [["--call-trace"], ["--call-ret-trace"], []]) {
      const a = ["-i", data, ...extra];
      assert.equal(ok(a), perfScript(a), extra.join(" "));
    }
  });
});

const addr2line = spawnSync("addr2line", ["--version"]).status === 0;
const gcc = spawnSync("gcc", ["--version"]).status === 0;

describe("-F srcline: the source line below each sample (addr2line, as perf)", () => {
  const noTool = addr2line ? false : "addr2line is not installed";
  const lines = (out: string) => out.split("\n");

  test("without debug information: the binary's name and address (perf's)", {
    skip: noTool,
  }, () => {
    const data = loopData(3000, { CYCEn: 0 }, "nodebug3000");
    const args = ["-i", data, "--itrace=i1i", "-F", "ip,sym,srcline"];
    const out = lines(ok(args));
    // 12,001 samples, each followed by its srcline line.
    assert.equal(out.length, 2 * 12_001 + 1);
    assert.equal(out[0], "           400000 main");
    // perf's address in the file (objdump's): the file offset plus .text's address less
    // its offset; elfWithSymbolsLayout's .text is 0x20 bytes after its PT_LOAD's offset.
    assert.equal(out[1], "  nodebug3000.elf[3fffe0]");
    assert.equal(out[3], "  nodebug3000.elf[3fffe5]");
    if (!noPerf) assert.equal(out.join("\n"), perfScript(args));
  });

  test("a program built with -g: file:line of each instruction", {
    skip: noTool || (gcc ? false : "gcc is not installed"),
  }, () => {
    const prog = join(dir, "src", "t");
    mkdirSync(join(dir, "src"), { recursive: true });
    writeFileSync(
      `${prog}.c`,
      [
        "int g;",
        "void f(void)",
        "{",
        "  g += 1;",
        "  g *= 3;",
        "}",
        "void _start(void)",
        "{",
        "  f();",
        "  g += 2;",
        "  f();",
        "  for (;;)",
        "    ;",
        "}",
        "",
      ].join("\n"),
    );
    const cc = spawnSync(
      "gcc",
      [
        "-g",
        "-O0",
        "-nostdlib",
        "-static",
        "-no-pie",
        "-fno-pie",
        "-fcf-protection=none",
        "-o",
        prog,
        `${prog}.c`,
      ],
      { encoding: "utf8" },
    );
    assert.equal(cc.status, 0, cc.stderr);
    const data = gccProgramData(prog);
    const args = ["-i", data, "--itrace=cr", "-F", "ip,sym,srcline,addr,flags"];
    const out = lines(ok(args));
    // The two calls of f (lines 9 and 11) and its returns (line 6), then the end in the loop (12).
    assert.equal(out.length, 11);
    assert.deepEqual(
      out.filter((_, k) => k % 2 === 1),
      ["  t.c:9", "  t.c:6", "  t.c:11", "  t.c:6", "  t.c:12"],
    );
    assert.match(out[0]!, /^ {2}call +[0-9a-f]+ _start => +[0-9a-f]+ f$/);
    // srcline comes before the instruction's bytes.
    const bytes = lines(ok(["-i", data, "--itrace=c", "-F", "ip,srcline,insn"]));
    assert.match(bytes[1]!, /^ {2}t\.c:9 insn: e8( [0-9a-f]{2}){4}$/);
    if (noPerf) return;
    assert.equal(out.join("\n"), perfScript(args));
    for (const more of [
      ["--itrace=i1i", "-F", "ip,sym,srcline"],
      ["-F", "+srcline"],
      ["--itrace=be", "-F", "ip,srcline,addr,flags,insn,insnlen"],
    ])
      assert.equal(ok(["-i", data, ...more]), perfScript(["-i", data, ...more]), more.join(" "));
  });
});

/** A perf.data of `prog` (a static, non-PIE ELF from gcc, .text at 0x401000 from file offset 0x1000) run from _start to its endless loop. */
function gccProgramData(prog: string): string {
  const bytes = new Uint8Array(readFileSync(prog));
  const elf = parseElf(bytes);
  const text = elf.sections.find((s) => s.name === ".text")!;
  const start = elf.entryLo;
  const info = new InsnInfo();
  const exec: string[] = [];
  const stack: number[] = [];
  let ip = start;
  for (let n = 0; n < 1000; n++) {
    const len = decodeInsn(bytes, text.offset + (ip - text.addrLo), 0, ip, ExecMode.Bits64, info);
    assert.ok(len > 0);
    if (info.iclass === InsnClass.Jump && info.targetLo === ip) {
      exec.push(JSON.stringify({ k: "end", ip: `0x${ip.toString(16)}` }));
      break;
    }
    const cls =
      info.iclass === InsnClass.Call ? "call" : info.iclass === InsnClass.Return ? "return" : "other";
    exec.push(insn(BigInt(ip), len, cls));
    if (cls === "call") {
      stack.push(ip + len);
      ip = info.targetLo;
    } else if (cls === "return") ip = stack.pop()!;
    else ip += len;
  }
  const file = new PtFile({ perfScript: true })
    .comm(100, "t", TRACE_TSC - 100n, 0)
    .mmap2(100, BigInt(text.addrLo & ~0xfff), 0x1000n, BigInt(text.offset & ~0xfff), prog, TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n, 0)
    .trace(traceOf(exec, { CYCEn: 0 }), 0);
  const data = `${prog}.data`;
  writeFileSync(data, fileMode(file.built()));
  return data;
}

describe("x, w and p: transactions, PTWRITE and power events (perf's lines)", () => {
  // nop; nop; ptwrite eax; nop; mwait; nop; xbegin; nop; xend; xbegin; nop; nop; hlt,
  // run with a PTWRITE (no FUP), an MWAIT into C2.1 and a wake by interrupt, a
  // committed transaction and an aborted one.
  const code = Uint8Array.from([
    0x90, 0x90, 0xf3, 0x0f, 0xae, 0xe0, 0x90, 0x0f, 0x01, 0xc9, 0x90, 0xc7, 0xf8, 0x07, 0, 0, 0, 0x90, 0x0f,
    0x01, 0xd5, 0xc7, 0xf8, 0x02, 0, 0, 0, 0x90, 0x90, 0xf4,
  ]);
  const at = (off: number) => `0x${(BASE + BigInt(off)).toString(16)}`;
  const exec = [
    insn(BASE, 1),
    insn(BASE + 1n, 1),
    insn(BASE + 2n, 4, "ptwrite"),
    JSON.stringify({ k: "ptw", value: "0x11223344", bytes: 4 }),
    insn(BASE + 6n, 1),
    insn(BASE + 7n, 3, "mwait"),
    JSON.stringify({ k: "mwait", hints: 0x20, ext: 1 }),
    JSON.stringify({ k: "sleep", cstate: 2, substate: 1 }),
    JSON.stringify({ k: "ticks", n: 1000 }),
    JSON.stringify({ k: "wake", last: 2, deepest: 3, reasons: ["interrupt"] }),
    insn(BASE + 0xan, 1),
    insn(BASE + 0xbn, 6, "xbegin"),
    insn(BASE + 0x11n, 1),
    insn(BASE + 0x12n, 3, "xend"),
    insn(BASE + 0x15n, 6, "xbegin"),
    insn(BASE + 0x1bn, 1),
    JSON.stringify({ k: "tsx-abort", from: at(0x1c), to: at(0x1d) }),
    JSON.stringify({ k: "end", ip: at(0x1d) }),
  ];
  const elf = elfWithSymbolsLayout(BASE, code, [{ name: "main", value: BASE, size: code.length }]);
  const prog = join(dir, "events.elf");
  writeFileSync(prog, elf.bytes);
  const ctl = { ...BRANCHES, TSCEn: 1, MTCEn: 1, MTCFreq: 3, PTWEn: 1, PwrEvtEn: 1 };
  const m = msrs({ ctl, caps: { ptwrite: true, powerEventTrace: true } });
  const trace = generate(readExecJsonl(`${exec.join("\n")}\n`), { msrs: m, cyclesPerInsn: 3 }).bytes;
  // perf synthesizes power and ptwrite events only when the event's config asks for them (pwr_evt, ptw).
  const file = new PtFile({ perfScript: true, config: (1n << 4n) | (1n << 12n) })
    .comm(100, "ev", TRACE_TSC - 100n, 1)
    .mmap2(100, BASE, 0x1000n, BigInt(elf.segOffsets[0]!), prog, TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n, 1)
    .trace(trace, 1);
  const data = join(dir, "events.data");
  writeFileSync(data, fileMode(file.built()));

  test("--itrace=xwp -F ip,synth,event: perf's texts and the IPs it shows", () => {
    const args = ["-i", data, "--itrace=xwp", "-F", "ip,synth,event,flags"];
    const out = ok(args);
    const pad = (name: string, text: string, ip: number) =>
      `${name.padStart(20)}:   ${"".padEnd(22)}${` ${text}`.padEnd(34)} ${(0x400000 + ip).toString(16).padStart(16)}`;
    const tx = (flags: string, ip: number) =>
      `${"transactions".padStart(20)}:   ${flags.padEnd(22)} ${(0x400000 + ip).toString(16).padStart(16)}`;
    assert.deepEqual(out.split("\n").slice(2, -1), [
      // No FUP: the IP perf's decoder had (the PSB's); IP: 0.
      pad("ptwrite", "IP: 0 payload: 0x11223344", 0),
      pad("mwait", "hints: 0x20 extensions: 0x1", 7),
      // PWRE before the EXSTOP of the same FUP; pwrx's text ends in a space.
      pad("pwre", "hw: 0 cstate: 2 sub-cstate: 1", 7),
      pad("exstop", "IP: 1", 7),
      pad("pwrx", "deepest cstate: 3 last cstate: 2 wake reason: 0x1 ", 7),
      // Transactions: x at a begin, nothing at the commit, tx abrt at the abort.
      tx("x", 0xb),
      tx("", 0x12),
      tx("x", 0x15),
      tx("tx abrt", 0x1c),
    ]);
    if (!noPerf) assert.equal(out, perfScript(args));
  });

  test("default fields, --itrace=bx with addr (the abort is a tx abrt branch), --call-ret-trace", {
    skip: noPerf,
  }, () => {
    for (const args of [
      [],
      ["--itrace=xwpeb", "-F", "time,ip,sym,flags,synth,event,addr", "--ns"],
      ["--itrace=bx", "-F", "ip,flags,addr"],
      ["--call-ret-trace"],
    ])
      assert.equal(ok(["-i", data, ...args]), perfScript(["-i", data, ...args]), args.join(" "));
  });
});

describe("--itrace=e: decode errors in perf's words", () => {
  test("a corrupt trace: perf's error line (type, time, cpu, pid, tid, ip, code and message)", () => {
    const good = readFileSync(loopData(3000, { CYCEn: 0 }, "corrupt3000"));
    // 40 bytes of the trace (the middle of the file) overwritten.
    const bad = Uint8Array.from(good);
    for (let k = 0; k < 40; k++) bad[(bad.length >> 1) + k] = (k * 37 + 11) & 0xff;
    const data = join(dir, "corrupt.data");
    writeFileSync(data, bad);
    const r = ptkit(["-i", data, "--itrace=e"]);
    assert.equal(r.status, 0, r.err);
    const lines = r.out.split("\n").filter((l) => l !== "");
    assert.ok(lines.length >= 1);
    for (const l of lines)
      assert.match(
        l,
        /^ instruction trace error type 1 time \d+\.\d{9} cpu 2 pid 100 tid 100 ip (0|0x[0-9a-f]+) code \d+: [A-Z][\w' !]+$/,
      );
    // The return compression the corrupt bytes break: perf's "Trace doesn't match instruction" at f.
    assert.match(lines[0]!, / ip 0x400010 code 6: Trace doesn't match instruction$/);
    assert.match(r.err, /note: 1 instruction trace error \(as perf warns\)/);
    if (noPerf) return;
    // perf resynchronises otherwise after the first error (it reports more): the first lines' ip, code and message agree.
    const first = perfScript(["-i", data, "--itrace=e"]).split("\n")[0]!;
    assert.equal(lines[0]!.replace(/ time \S+/, ""), first.replace(/ time \S+/, ""));
  });
});

const HASE = "real/hase";
const RUNS = ["2018-05/loopy-20180514T145114", "2018-05/control_flow-20180515T180451"];

describe("perf script's lines on the HASE captures", () => {
  for (const run of RUNS) {
    test(run, { skip: skipUnlessCorpus(HASE, run) }, () => {
      const cwd = corpusPath(HASE, run)!;
      const common = ["-i", "perf.data.1", "--symfs", "binaries"];
      const sets = [
        ["--itrace=be", "-F", "ip,addr,flags"],
        ["--itrace=cr", "-F", "ip,addr,flags"],
        ["--itrace=i1i", "-F", "tid,time,ip,insnlen"],
        ["--itrace=i1i", "-F", "ip,insn,insnlen"],
        ["--itrace=i2t", "-F", "tid,time,ip,period"],
        ["--itrace=i16t", "-F", "tid,time,ip,period"],
        ["--itrace=i100", "-F", "tid,time,ip,period"],
        ["--itrace=be", "-F", "comm,tid,pid,time,cpu,event,ip,dso,addr,flags,period"],
        // Instruction samples: a branch's flags (tr end too) and target as perf gives them.
        ["--itrace=i1ib", "-F", "ip,addr,flags,event"],
        ["--itrace=c", "-F", "+flags"],
        ["--itrace=c", "-F", "+flags,+pid"],
        ["--itrace=c", "-F", "-cpu"],
        ["--call-trace"],
        ["--call-ret-trace"],
        ["--itrace=cr", "-F", "tid,ip,sym,symoff,addr,flags"],
        ["--itrace=be", "-F", "comm,tid,pid,time,cpu,event,ip,sym,dso,addr,flags,period"],
        // perf's default: branches and PSBs with time and names.
        [],
      ];
      const outs = sets.map((s) => ok([...common, ...s], cwd));
      // The loopy run: tracing starts at _start, stops at each syscall.
      if (run.includes("loopy")) {
        // insn: the bytes (a branch sample's are its branch's; tr strt repeats the last one's).
        assert.equal(outs[3]!.split("\n")[0], "           4000e8 ilen: 4 insn: 4c 8b 04 24");
        const branches = ok([...common, "--itrace=be", "-F", "ip,addr,flags,insn,insnlen"], cwd).split("\n");
        assert.deepEqual(branches.slice(3, 6), [
          "  tr end  syscall                  40010e =>                0 ilen: 2 insn: 0f 05",
          "  tr strt                               0 =>           400110 ilen: 2 insn: 0f 05",
          "  jcc                              400117 =>           4000ec ilen: 2 insn: 75 d3",
        ]);
        assert.equal(
          outs[1]!.split("\n")[0],
          "  tr strt                               0 =>           4000e8",
        );
        assert.equal(
          outs[1]!.split("\n")[3],
          "  tr end  syscall                  40010e =>                0",
        );
        // A PSB+ with tracing off (BDM70 sets its FUP aside) shows at that FUP's IP.
        const psb = outs
          .at(-1)!
          .split("\n")
          .find((l) => l.includes("psb offs: 0x28"));
        assert.match(
          psb ?? "",
          / 4000e8 _start\+0x0 \(\/home\/joerg\/git\/hase\/tests\/bin\/loopy\/loopy\)$/,
        );
      }
      // The control_flow run: names as perf's, where symbols share an address
      // (static_init_tls, LOCAL, over __init_tls, WEAK) and for a label outside a
      // section named *text* (_init in .init: perf leaves it unnamed).
      if (run.includes("control_flow")) {
        const calls = outs[sets.findIndex((s) => s.includes("tid,ip,sym,symoff,addr,flags"))]!.split("\n");
        assert.ok(
          calls.includes(
            "11181   call                             400406 __init_libc+0xf6 =>           400770 static_init_tls+0x0",
          ),
          calls.join("\n"),
        );
        assert.ok(
          calls.includes(
            "11181   call                             400536 libc_start_init+0x6 =>           400158 [unknown]",
          ),
          calls.join("\n"),
        );
      }
      if (noPerf) return;
      for (const [k, s] of sets.entries())
        assert.equal(outs[k], perfScript([...common, ...s], cwd), s.join(" "));
    });
  }
});

describe("symbol names from debug files (perf's /usr/lib/debug search)", () => {
  const { code, exec } = loopProgram(BASE, 2);
  const RECORDED = "/opt/app/loop";
  const symfs = join(dir, "symfs");
  const named = (prefix: string) =>
    elfWithSymbolsLayout(BASE, code, [
      { name: `${prefix}main`, value: BASE, size: 0x10 },
      { name: `${prefix}f`, value: BASE + 0x10n, size: 1 },
    ]);
  // The binary's own table names main and f; the debug file's, dbg_main and dbg_f.
  const binary = named("");
  mkdirSync(join(symfs, "opt/app"), { recursive: true });
  writeFileSync(join(symfs, RECORDED), binary.bytes);
  const file = new PtFile({ perfScript: true })
    .comm(100, "loop", TRACE_TSC - 100n)
    .mmap2(100, BASE, 0x1000n, BigInt(binary.segOffsets[0]!), RECORDED, TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n)
    .trace(traceOf(exec));
  const data = join(dir, "debug.data");
  writeFileSync(data, fileMode(file.built()));
  const args = ["-i", data, "--symfs", symfs, "--itrace=c", "-F", "ip,sym,addr"];
  const first = (out: string) => out.split("\n")[0];

  test("without a debug file: the binary's names", () => {
    assert.equal(first(ok(args)), `           400005 main =>           400010 f`);
  });

  test("<symfs>/usr/lib/debug/<path>: its names, as perf script finds them", () => {
    const debug = join(symfs, "usr/lib/debug/opt/app");
    mkdirSync(debug, { recursive: true });
    writeFileSync(join(debug, "loop"), named("dbg_").bytes);
    try {
      const out = ok(args);
      assert.equal(first(out), `           400005 dbg_main =>           400010 dbg_f`);
      if (!noPerf) assert.equal(out, perfScript(args));
    } finally {
      rmSync(join(symfs, "usr"), { recursive: true, force: true });
    }
  });

  test("a debug root of the test's own: <root><path>.debug before <root><path>", () => {
    const root = join(dir, "debugroot");
    mkdirSync(join(root, "opt/app"), { recursive: true });
    writeFileSync(join(root, "opt/app/loop"), named("ubuntu_").bytes);
    writeFileSync(join(root, "opt/app/loop.debug"), named("fedora_").bytes);
    // The binary by --elf (no --symfs), the debug files under the root given.
    const io = captureIo(dir);
    const elfArgs = ["-i", data, "--elf", join(symfs, RECORDED), "--itrace=c", "-F", "ip,sym,addr"];
    assert.equal(runPerf(elfArgs, io, EMPTY_HOME, { debugRoot: root }), 0, io.err.join(""));
    assert.equal(first(io.out.join("")), `           400005 fedora_main =>           400010 fedora_f`);
  });
});
