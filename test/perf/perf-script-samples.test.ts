/**
 * perf script's lines for the samples of other events (`perf record -e intel_pt//u
 * -e cpu-clock`, `-e cpu-clock -g`): ptkit perf prints them as perf script 6.1 does,
 * in time order among the Intel PT samples. Checked against perf itself where it is
 * installed: on a generated file (an Intel PT trace and cpu-clock samples, with and
 * without callchains) and on a software-event recording made in the test.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileMode, Le, pipeMode, record } from "../../tools/perf/perf-data-writer.js";
import { CONTEXT_USER, elfWithSymbolsLayout, PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { EMPTY_HOME } from "./home.js";
import { loopProgram, traceOf } from "./pt-file.js";
import { perfScriptRun, ptkitPerfRun } from "./script-runs.js";

const perf = spawnSync("perf", ["version"], { encoding: "utf8" });
const noPerf = perf.status === 0 ? false : "perf is not installed";
const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-samples-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const BASE = 0x400000n;

/** `perf script ARGS` of `data`: its output and exit status. */
const perfScript = (data: string, args: string[]) => perfScriptRun(["-i", data, ...args]);
const ptkitPerf = (args: string[]) => ptkitPerfRun(args, dir);

interface MixedOptions {
  /** The samples have callchains. */
  chain?: boolean;
  /** The program is mapped as the kernel maps it: from file offset 0, a page (not its segment's offset). */
  aligned?: boolean;
  /** The sampled event instead of cpu-clock:u (software): its name and PERF_TYPE_*. */
  event?: [string, number];
  /** Written as a pipe (perf record -o -): the events in HEADER_ATTR records. */
  pipe?: boolean;
  /** More records (after the samples), given the cpu-clock event's id. */
  extra?: (file: PtFile, clock: number) => void;
}

/**
 * A perf.data of the loop program traced with Intel PT (300 turns), with cpu-clock
 * samples at `times` (TSCs, which are perf times here) in its main function.
 */
function mixedFile(name: string, times: bigint[], o: MixedOptions = {}): string {
  const { code, exec } = loopProgram(BASE, 300);
  const elf = elfWithSymbolsLayout(BASE, code, [{ name: "main", value: BASE, size: code.length }]);
  const prog = join(dir, `${name}.elf`);
  writeFileSync(prog, elf.bytes);
  const file = new PtFile({ perfScript: true });
  const [eventName, eventType] = o.event ?? ["cpu-clock:u", 1];
  const clock = file.otherEvent(eventName, eventType, 0n, o.chain);
  const at = BigInt(elf.segOffsets[0]!);
  file
    .comm(100, "prog", TRACE_TSC - 100n)
    .mmap2(100, o.aligned ? BASE - at : BASE, 0x1000n, o.aligned ? 0n : at, prog, TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n);
  times.forEach((t, i) => {
    const ip = BASE + BigInt([5, 0xa, 0xc, 0x10][i % 4]!);
    file.sample(clock, 100, 100, t, 0, ip, 10000n + BigInt(i), [CONTEXT_USER, ip, BASE + 0xan, 0n]);
  });
  o.extra?.(file, clock);
  file.trace(traceOf(exec));
  const data = join(dir, `${name}.data`);
  writeFileSync(data, (o.pipe ? pipeMode : fileMode)(file.built()));
  return data;
}

/** Sample times: before the trace, every 41 TSC ticks through it (between and at its timing packets), after it. */
const TIMES = [
  TRACE_TSC - 5n,
  ...Array.from({ length: 60 }, (_, i) => TRACE_TSC + BigInt(i * 41)),
  TRACE_TSC + 100000n,
];

/** ptkit perf's lines are perf script's, byte for byte, for each argument list. */
function samePerfScript(data: string, argLists: string[][]): void {
  for (const args of argLists) {
    const want = perfScript(data, args);
    assert.equal(want.status, 0, want.err);
    const got = ptkitPerf(["-i", data, ...args]);
    assert.equal(got.err, "");
    assert.equal(got.out, want.out, args.join(" "));
  }
}

test("Intel PT and cpu-clock samples: perf script's lines, in its order", { skip: noPerf }, () => {
  const data = mixedFile("mixed", TIMES);
  samePerfScript(data, [
    [],
    ["--itrace=cr"],
    ["--itrace=be", "--ns", "-F", "comm,tid,time,event,ip,sym,dso,period,flags,addr"],
    ["--itrace=i10i", "--ns", "-F", "comm,pid,tid,cpu,time,event,ip,sym,symoff"],
    ["--itrace=be", "-F", "sw:comm,tid,time,event,ip"],
    ["--itrace=cr", "-F", "hw:comm,tid,time,event,ip,flags"],
  ]);
});

test("Intel PT and cycles samples: a hardware event's fields are the Intel PT samples' (-F hw:)", {
  skip: noPerf,
}, () => {
  const data = mixedFile("cycles", TIMES, { event: ["cycles:u", 0] });
  samePerfScript(data, [
    [],
    ["--itrace=cr", "-F", "hw:comm,tid,time,event,ip,sym"],
    ["--itrace=cr", "-F", "sw:comm,tid,ip"],
  ]);
});

test("Intel PT and cpu-clock samples with callchains: perf script's lines", { skip: noPerf }, () => {
  const data = mixedFile("chain", TIMES, { chain: true });
  samePerfScript(data, [[], ["--itrace=cr", "-F", "comm,tid,time,ip,sym,dso"], ["-F", "+pid,-period"]]);
});

test("a pipe (events in HEADER_ATTR records): the lines of the same file", () => {
  const args = ["--itrace=cr", "-F", "comm,tid,time,event,ip,sym,period"];
  const file = ptkitPerf(["-i", mixedFile("as-file", TIMES, { chain: true }), ...args]);
  const pipe = ptkitPerf(["-i", mixedFile("as-pipe", TIMES, { chain: true, pipe: true }), ...args]);
  assert.equal(pipe.err, "");
  assert.equal(pipe.out.split("cpu-clock:u:").length - 1, TIMES.length);
  assert.equal(pipe.out, file.out);
});

// (perf script refuses such a file with Intel PT in it: its look ahead at the records
// fails on the sample, "failed to process type: 70 [Bad address]".)
test("a sample of an event id the file does not have: skipped with a warning", () => {
  const data = mixedFile("unknown-id", [TRACE_TSC + 10n, TRACE_TSC + 30n], {
    extra: (file) => file.sample(999, 100, 100, TRACE_TSC + 20n, 0, BASE, 1n),
  });
  const got = ptkitPerf(["-i", data, "--itrace=e", "-F", "time,event,ip"]);
  assert.equal(got.status, 0);
  assert.match(
    got.err,
    /^ptkit perf: warning: .*unknown-id\.data: SAMPLE record of unknown event id 999 at offset 0x[0-9a-f]+: skipped\.\n$/,
  );
  // The other two are there, in time order (no Intel PT samples but errors, of which there are none).
  assert.equal(
    got.out,
    "   68.719476: cpu-clock:u:            400005\n   68.719476: cpu-clock:u:            40000a\n",
  );
});

test("a callchain that runs past its record's end: that sample skipped with a note", () => {
  const data = mixedFile("bad-chain", [TRACE_TSC + 10n], {
    chain: true,
    // The chain's count says 1000 entries; the record has 1.
    extra: (file, clock) => {
      const body = new Le()
        .u64(clock)
        .u64(BASE)
        .u32(100)
        .u32(100)
        .u64(TRACE_TSC + 20n);
      body.u32(0).u32(0).u64(1).u64(1000).u64(BASE);
      file.records.push(record(9, 2, body));
    },
  });
  const got = ptkitPerf(["-i", data, "--itrace=e", "-F", "event,ip"]);
  assert.equal(got.status, 0);
  assert.equal(
    got.err,
    "ptkit perf: note: 1 SAMPLE record skipped: its callchain of 1000 entries runs past its end.\n",
  );
  // The frames in the program show as offsets in its file (its code is at 0x80), as perf shows them.
  assert.equal(got.out, "cpu-clock:u: \n\t              85\n\t              8a\n\t               0\n\n");
});

test("a binary mapped from a page before its code (pgoff 0): its symbols are found", () => {
  const data = mixedFile("aligned", [TRACE_TSC + 10n], { aligned: true });
  const got = ptkitPerf(["-i", data, "--itrace=e", "-F", "ip,sym,symoff"]);
  assert.equal(got.err, "");
  assert.equal(got.out, "           400005 main+0x5\n");
  if (noPerf) return;
  assert.equal(got.out, perfScript(data, ["--itrace=e", "-F", "ip,sym,symoff"]).out);
});

/**
 * A program that spins in user mode a while and exits (`mov ecx, 0x1000000; l: dec
 * ecx; jnz l; exit(0)`), its code in `spin` at an address the kernel can map (the same
 * as its file offset modulo a page): what the recordings below sample.
 */
function spinProgram(path: string): void {
  const code = Uint8Array.from([
    0xb9, 0, 0, 0, 1, 0xff, 0xc9, 0x75, 0xfc, 0xb8, 60, 0, 0, 0, 0x31, 0xff, 0x0f, 0x05,
  ]);
  const probe = elfWithSymbolsLayout(BASE, code, []);
  const text = BASE + BigInt(probe.segOffsets[0]! % 0x1000);
  const elf = elfWithSymbolsLayout(text, code, [{ name: "spin", value: text, size: code.length }]);
  writeFileSync(path, elf.bytes, { mode: 0o755 });
}

/** `perf record -N ARGS -- prog` into `name`: the file, or why it could not record. */
function perfRecord(name: string, args: string[], prog: string): { data: string } | { why: string } {
  const data = join(dir, name);
  const r = spawnSync("perf", ["record", "-N", "-q", "-o", data, ...args, "--", prog], {
    encoding: "utf8",
    env: { ...process.env, HOME: EMPTY_HOME },
  });
  if (r.status === 0) return { data };
  return {
    why: `perf record ${args.join(" ")} failed here (${r.stderr.split("\n")[0] || `status ${r.status}`})`,
  };
}

test("software events recorded here (cpu-clock, task-clock; -g): perf script's lines", {
  skip: noPerf,
}, (t) => {
  const prog = join(dir, "spin");
  spinProgram(prog);
  const plain = perfRecord("sw.data", ["-e", "cpu-clock:u", "-c", "100000"], prog);
  if ("why" in plain) {
    t.skip(plain.why);
    return;
  }
  samePerfScript(plain.data, [
    [],
    ["-F", "comm,tid,time,period,event,ip,sym,dso"],
    ["-F", "+pid", "--ns"],
    ["-F", "sw:comm,tid,ip"],
  ]);
  // --time between two samples' times (perf time: this machine's files may have no TSC conversion).
  const times = perfScript(plain.data, ["-F", "time", "--ns"]).out.match(/\d+\.\d{9}/g) ?? [];
  assert.ok(times.length > 8, `${times.length} samples recorded`);
  samePerfScript(plain.data, [["--time", `${times[3]},${times[8]}`, "-F", "comm,tid,time,event,ip"]]);
  // A field the samples lack, named: refused by both (perf exits 255).
  const want = perfScript(plain.data, ["-F", "comm,tid,cpu,time"]);
  const got = ptkitPerf(["-i", plain.data, "-F", "comm,tid,cpu,time"]);
  assert.notEqual(want.status, 0);
  assert.equal(got.status, 1);
  assert.equal(got.err, `ptkit perf: ${want.err}`);
  const chains = perfRecord("swg.data", ["-g", "-e", "cpu-clock:u,task-clock:u", "-c", "100000"], prog);
  if ("why" in chains) {
    t.skip(chains.why);
    return;
  }
  samePerfScript(chains.data, [[], ["-F", "comm,tid,time,event,ip,sym,symoff,dso"], ["-F", "-period,+pid"]]);
});

const QUIPPER = ["real", "quipper-perf-data", "perf.data.intel_pt-4.14"];

test("a real capture (intel_pt// and cycles, 15 cycles samples): the cycles lines of perf script", {
  skip: skipUnlessCorpus(...QUIPPER),
}, () => {
  const data = corpusPath(...QUIPPER)!;
  // The cycles event has no CPU in its samples: perf prints -1 (CPU named, the file has a trace).
  const args = ["--itrace=cr", "-F", "comm,tid,cpu,time,event,ip,period,flags"];
  const cycles = (out: string) => out.split("\n").filter((l) => l.includes(" cycles: "));
  const got = cycles(ptkitPerf(["-i", data, ...args]).out);
  assert.equal(got.length, 15);
  assert.equal(
    got[0],
    "            perf  3174 [-01]   641.256820:          1     cycles:                          ffffffffb96071f4",
  );
  // The filters: samples without CPU are in no CPU list (perf's cpu -1).
  const count = (more: string[]) => cycles(ptkitPerf(["-i", data, "--itrace=e", ...more]).out).length;
  const filters: Array<[string[], number]> = [
    [["--tid", "3174"], 15],
    [["--comm", "echo"], 13],
    [["--cpu", "3"], 0],
    [["-C", "0,3"], 0],
  ];
  for (const [more, n] of filters) assert.equal(count(more), n, more.join(" "));
  if (noPerf) return;
  assert.deepEqual(got, cycles(perfScript(data, args).out));
  for (const [more, n] of filters)
    assert.equal(cycles(perfScript(data, ["--itrace=e", ...more]).out).length, n, more.join(" "));
});
