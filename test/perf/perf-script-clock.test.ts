/**
 * perf script's times across AUX buffers (issue 15): perf decodes a queue's buffers
 * as one trace, and its CYC times count from the last TSC or MTC that followed a CYC
 * (time/perf-clock.ts). After a gap between buffers, CYC times fall behind the new
 * PSB's TSC and are dropped: time stands at the PSB's TSC until the first MTC after
 * a CYC. A generated perf.data of three runs of a loop, each its own AUX buffer after
 * a gap, timed by CYC: ptkit perf's lines against perf script's, byte for byte where
 * perf is installed; the frozen stretch everywhere.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { PacketDecoder } from "../../src/packet/decoder.js";
import { Packet, PacketType } from "../../src/packet/types.js";
import { readExecJsonl } from "../../src/unit/exec/jsonl.js";
import { generate } from "../../src/unit/gen/index.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbolsLayout, PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { BRANCHES, msrs } from "../unit/gen/helpers.js";
import { insn, loopProgram } from "./pt-file.js";
import { okOut, perfScriptRun, ptkitPerfRun } from "./script-runs.js";

const perf = spawnSync("perf", ["version"], { encoding: "utf8" });
const noPerf = perf.status === 0 ? false : "perf is not installed";
const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-clock-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const BASE = 0x400000n;
const TURNS = 3000;
/** TSC ticks between the end of one run and the PSB of the next. */
const GAP = 200_000n;

/**
 * Where to cut `trace` so that buffers end right after every `every`-th MTC that
 * follows a CYC: there perf's look-ahead for its CYC ratio finds the end of the buffer.
 */
function cutsAfterMtc(trace: Uint8Array, every: number): number[] {
  const dec = new PacketDecoder(trace);
  const pkt = new Packet();
  const cuts: number[] = [];
  let prev = -1;
  let n = 0;
  if (dec.syncSet(0) < 0) return cuts;
  while (dec.next(pkt) >= 0) {
    if (pkt.type === PacketType.Mtc && prev === PacketType.Cyc && ++n % every === 0) cuts.push(dec.pos);
    if (pkt.type !== PacketType.Pad) prev = pkt.type;
  }
  return cuts;
}

/**
 * Three runs of the loop, each starting with PSB+, GAP after the last; each an AUX
 * buffer of its own, or (`every`) all cut after every `every`-th MTC that follows a CYC.
 */
function buffersData(every?: number, first = TRACE_TSC): { data: string; starts: bigint[] } {
  const { code, exec } = loopProgram(BASE, TURNS);
  const elf = elfWithSymbolsLayout(BASE, code, [
    { name: "main", value: BASE, size: 0x10 },
    { name: "f", value: BASE + 0x10n, size: 1 },
  ]);
  const prog = join(dir, "loop.elf");
  writeFileSync(prog, elf.bytes);
  const file = new PtFile({ perfScript: true })
    .comm(100, "prog", first - 100n)
    .mmap2(100, BASE, 0x1000n, BigInt(elf.segOffsets[0]!), prog, first - 50n)
    .itraceStart(100, 100, first - 10n);
  const ctl = { ...BRANCHES, TSCEn: 1, MTCEn: 1, MTCFreq: 3, CYCEn: 1, PSBFreq: 0 };
  const starts: bigint[] = [];
  const runs: Uint8Array[] = [];
  let tsc = first;
  for (let run = 0; run < 3; run++) {
    starts.push(tsc);
    // (The execution and the MSRs are used up by a run.)
    const execution = readExecJsonl(`${exec.join("\n")}\n`);
    // A core clock of 4 GHz, the TSC's (nominal ratio 40): one TSC tick a cycle. The
    // file says 37 (PtFile's auxtrace info), so perf's CBR-based ratio (37 / 40) is not
    // the one it measures between MTCs (1).
    const clock = { nominalRatio: 40, cbr: 40 };
    runs.push(generate(execution, { msrs: msrs({ ctl }), cyclesPerInsn: 3, tsc, ...clock }).bytes);
    // 4 instructions a turn, 3 cycles each.
    tsc += BigInt(TURNS * 4 * 3) + GAP;
  }
  if (every) {
    const all = Buffer.concat(runs);
    let at = 0;
    for (const cut of [...cutsAfterMtc(all, every), all.length]) {
      file.trace(all.subarray(at, cut), 0, cut - at, at, first);
      at = cut;
    }
  } else {
    let offset = 0;
    for (const [run, trace] of runs.entries()) {
      file.trace(trace, 0, trace.length, offset, starts[run]);
      offset += trace.length;
    }
  }
  const data = join(dir, `buffers${every ?? ""}-${first.toString(16)}.data`);
  writeFileSync(data, fileMode(file.built()));
  return { data, starts };
}

const { data, starts } = buffersData();

function ptkit(args: string[]): string {
  const r = ptkitPerfRun(args, dir);
  assert.equal(r.err, "");
  return okOut(r);
}

const perfScript = (args: string[]) => okOut(perfScriptRun(args, dir), "perf script");

/** perf time (--ns) of TSC `tsc` (the file's TIME_CONV is the identity). */
const ns = (tsc: bigint) => `${tsc / 1_000_000_000n}.${(tsc % 1_000_000_000n).toString().padStart(9, "0")}`;

test("after a gap between AUX buffers, branches keep the PSB's time until an MTC after a CYC, as perf's", () => {
  const out = ptkit(["-i", data, "--itrace=be", "-F", "time,ip,addr,flags", "--ns"]);
  const times = out
    .split("\n")
    .filter((l) => l.includes("=>"))
    .map((l) => l.trim().split(/\s+/)[0]!.replace(/:$/, ""));
  for (const start of starts.slice(1)) {
    const at = ns(start);
    const first = times.indexOf(at);
    assert.ok(first > 0, `no branch at the PSB's time ${at}`);
    // libipt's clock moves on from the PSB's TSC at the first CYC; perf's stands.
    let n = 0;
    while (times[first + n] === at) n++;
    assert.ok(n >= 10, `${n} branches at ${at}`);
    assert.ok(times[first + n]! > at, "time goes on after the frozen stretch");
  }
  // Never backwards.
  for (let i = 1; i < times.length; i++) assert.ok(times[i - 1]! <= times[i]!, `line ${i}`);
});

test("perf script's lines across the buffers: --call-trace, the default, branches with --ns", {
  skip: noPerf,
}, () => {
  // Also cut into buffers after every 7th MTC that follows a CYC: perf's look-ahead
  // for its CYC ratio stops at the end of a buffer.
  for (const file of [data, buffersData(7).data]) {
    for (const extra of [
      ["--call-trace"],
      [],
      ["--itrace=be", "-F", "time,ip,addr,flags", "--ns"],
      ["--itrace=i997i", "-F", "time,ip,period", "--ns"],
    ]) {
      const args = ["-i", file, ...extra];
      assert.equal(ptkit(args), perfScript(args), extra.join(" "));
    }
  }
});

test("perf script's times with a TSC above 2^53 (months of uptime), exact where perf's are, rounded where its doubles round", {
  skip: noPerf,
}, () => {
  // An odd TSC past 2^55, where doubles step by 8: perf's CYC times (in doubles) round,
  // its TSC and MTC times (integers) do not.
  const big = buffersData(undefined, 0x00a0_0000_0000_0003n);
  for (const extra of [["--call-trace"], ["--itrace=be", "-F", "time,ip,addr,flags", "--ns"]]) {
    const args = ["-i", big.data, ...extra];
    assert.equal(ptkit(args), perfScript(args), extra.join(" "));
  }
  assert.match(ptkit(["-i", big.data, "--itrace=be", "-F", "time", "--ns"]), new RegExp(ns(big.starts[1]!)));
});

const KERNEL = 0xffffffff81000000n;

/**
 * The loop, user space traced only (OS=0), with an interrupt every 7th turn before the
 * jnz whose handler is only an IRETQ: tracing stops at a FUP after the ret and the dec
 * (perf: tr end async) and starts again at the jnz (tr strt), with no timing packet
 * between; or (`atRet`) before the dec, where the ret went (a FUP walk of no
 * instructions, which perf's sampling by time still counts as a walk). perf times such a tr strt by an estimate: its time plus 2 ticks x nominal /
 * CBR for each instruction walked since its last timing packet (the file's nominal
 * ratio is 37, the CBR 40), and lines after it keep that time until time passes it.
 * Timed by CYC (`cyc`) or by MTC alone (few timing packets: larger estimates).
 */
function interruptedData(cyc: boolean, atRet = false): string {
  const turns = 600;
  const { code } = loopProgram(BASE, turns);
  const elf = elfWithSymbolsLayout(BASE, code, [
    { name: "main", value: BASE, size: 0x10 },
    { name: "f", value: BASE + 0x10n, size: 1 },
  ]);
  const prog = join(dir, "loop-int.elf");
  writeFileSync(prog, elf.bytes);
  const exec = [insn(BASE, 5)];
  for (let t = 0; t < turns; t++) {
    exec.push(insn(BASE + 5n, 5, "call"), insn(BASE + 0x10n, 1, "return"));
    if (!atRet) exec.push(insn(BASE + 0xan, 2));
    if (t % 7 === 6) {
      const from = `0x${(BASE + (atRet ? 0xan : 0xcn)).toString(16)}`;
      exec.push(
        JSON.stringify({ k: "interrupt", vector: 32, from, to: `0x${KERNEL.toString(16)}` }),
        JSON.stringify({ k: "cpl", cpl: 0 }),
        insn(KERNEL, 2, "iret"),
        JSON.stringify({ k: "cpl", cpl: 3 }),
      );
    }
    if (atRet) exec.push(insn(BASE + 0xan, 2));
    exec.push(insn(BASE + 0xcn, 2, "cond-branch"));
  }
  exec.push(JSON.stringify({ k: "end", ip: `0x${(BASE + 0xen).toString(16)}` }));
  const ctl = { ...BRANCHES, OS: 0, TSCEn: 1, MTCEn: 1, MTCFreq: 3, CYCEn: cyc ? 1 : 0, PSBFreq: 0 };
  const execution = readExecJsonl(`${exec.join("\n")}\n`);
  const clock = { nominalRatio: 40, cbr: 40 };
  const trace = generate(execution, {
    msrs: msrs({ ctl }),
    cyclesPerInsn: 3,
    tsc: TRACE_TSC,
    ...clock,
  }).bytes;
  const file = new PtFile({ perfScript: true })
    .comm(100, "prog", TRACE_TSC - 100n)
    .mmap2(100, BASE, 0x1000n, BigInt(elf.segOffsets[0]!), prog, TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n)
    .trace(trace);
  const data = join(dir, `interrupted-${cyc ? "cyc" : "mtc"}${atRet ? "-ret" : ""}.data`);
  writeFileSync(data, fileMode(file.built()));
  return data;
}

/** The times (ns text) of the lines of `out` that `keep` selects, in order. */
const timesOf = (out: string, keep: (line: string) => boolean) =>
  out
    .split("\n")
    .filter(keep)
    .map((l) => l.trim().split(/\s+/)[0]!.replace(/:$/, ""));

test("a tr strt into user code after no timing packet has perf's estimated time, and the lines after it", () => {
  const data = interruptedData(false);
  const out = ptkit(["-i", data, "--itrace=be", "-F", "time,ip,addr,flags", "--ns"]);
  const lines = out.split("\n");
  // The MTC-timed run: no timing packet for the first stretch, from the PSB's TSC on.
  const start = ns(TRACE_TSC);
  // (The first starts the trace, right at the TSC.)
  const strts = lines.filter((l) => l.includes("tr strt"));
  assert.ok(strts.length >= 4);
  assert.equal(timesOf(strts[0]!, () => true)[0], start);
  // Each 7 turns (4 instructions) walked since that TSC add 2 x 28 x 37 / 40 ticks.
  for (let n = 1; n <= 3; n++) {
    const est = TRACE_TSC + BigInt(Math.floor((2 * 28 * n * 37) / 40));
    assert.equal(timesOf(strts[n]!, () => true)[0], ns(est), `tr strt ${n}`);
  }
  // The branches after an estimated tr strt keep its time (the decoder's is the TSC's).
  const second = lines.indexOf(strts[1]!);
  assert.equal(timesOf(lines[second + 1]!, () => true)[0], timesOf(strts[1]!, () => true)[0]);
  assert.ok(timesOf(strts[1]!, () => true)[0]! > start);
  // Never backwards.
  const times = timesOf(out, (l) => l.includes("=>"));
  for (let i = 1; i < times.length; i++) assert.ok(times[i - 1]! <= times[i]!, `line ${i}`);
});

test("tr strt after an interrupt, and instruction samples by time, against perf script", {
  skip: noPerf,
}, () => {
  for (const [cyc, atRet] of [
    [true, false],
    [false, false],
    [true, true],
    [false, true],
  ]) {
    const file = interruptedData(cyc!, atRet);
    for (const extra of [
      ["--call-ret-trace"],
      ["--itrace=be", "-F", "time,ip,addr,flags", "--ns"],
      ["--itrace=i1us", "-F", "time,ip,period", "--ns"],
      ["--itrace=i100ns", "-F", "time,ip,period", "--ns"],
      ["--itrace=i1usbe", "-F", "time,ip,period,addr,flags", "--ns"],
    ]) {
      const args = ["-i", file, ...extra];
      const what = `${cyc ? "CYC" : "MTC"}${atRet ? ", FUP at the ret's target" : ""}: ${extra.join(" ")}`;
      assert.equal(ptkit(args), perfScript(args), what);
    }
  }
});
