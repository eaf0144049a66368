/**
 * Image switches on PIP in a perf.data file without context-switch records: two
 * processes with different code at the same address take turns on one CPU (an
 * interrupt, MOV CR3, IRET). Process A is known from ITRACE_START; B's CR3 is
 * unknown until B is seen running (its MMAP2's sample_id), so its first turn decodes
 * from the first PSB after that; every later turn of either switches at the PIP.
 * A HASE capture with its switch records hidden still decodes to perf script's
 * instructions.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { runPerf } from "../../src/cli/perf/perf.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { elfWithSymbols, PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { EMPTY_HOME } from "./home.js";
import {
  CODE_CALLS,
  CODE_LOOP,
  CODE_SWITCH,
  callTurns,
  execIps,
  insn,
  loopTurns,
  SWITCH_KERNEL,
  switchTo,
  traceOf,
} from "./pt-file.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-pip-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const BASE = 0x400000n;
const KERNEL = SWITCH_KERNEL;
const CR3_A = "0xa000";
const CR3_B = "0xb000";
const codeA = CODE_CALLS;
const codeB = CODE_LOOP;
const codeK = CODE_SWITCH;
const turnA = (n: number) => callTurns(BASE, n);
const turnB = (n: number) => loopTurns(BASE, n);
const kernel = switchTo;
const a1 = [insn(BASE, 5), ...turnA(3000)];
const k1 = kernel(BASE + 5n, CR3_B);
const b1 = turnB(20000);
const k2 = kernel(BASE, CR3_A);
const a2 = turnA(2000);
const k3 = kernel(BASE + 5n, CR3_B);
const b2 = turnB(500);
const exec = [
  JSON.stringify({ k: "cpl", cpl: 3 }),
  JSON.stringify({ k: "cr3", cr3: CR3_A }),
  ...a1,
  ...k1,
  ...b1,
  ...k2,
  ...a2,
  ...k3,
  ...b2,
  JSON.stringify({ k: "end", ip: `0x${(BASE + 4n).toString(16)}` }),
];
const trace = traceOf(exec);
writeFileSync(join(dir, "a"), codeA);
writeFileSync(join(dir, "b"), codeB);
writeFileSync(join(dir, "vmlinux"), elfWithSymbols(KERNEL, codeK, []));

/** The file: A and B exec'd on CPU 1, A mapped on CPU 0, tracing started for A; B's MMAP2 at `bSeen`. */
function perfData(name: string, bSeen: bigint): string {
  const f = new PtFile()
    .comm(100, "a", TRACE_TSC - 100n, 1)
    .comm(200, "b", TRACE_TSC - 90n, 1)
    .mmap2(100, BASE, 0x1000n, 0n, "/bin/a", TRACE_TSC - 50n)
    .itraceStart(100, 100, TRACE_TSC - 10n)
    .mmap2(200, BASE, 0x1000n, 0n, "/bin/b", bSeen)
    .trace(trace);
  writeFileSync(join(dir, name), fileMode(f.built()));
  return name;
}

function run(args: string[]): { out: string; err: string; ips: string[] } {
  const io = captureIo(dir);
  assert.equal(runPerf(["--elf", "a", "--elf", "b", "--vmlinux", "vmlinux", ...args], io, EMPTY_HOME), 0);
  const out = io.out.join("");
  return { out, err: io.err.join(""), ips: out.split("\n").filter((l) => /^[0-9a-f]{16}$/.test(l)) };
}

test("PIPs switch between processes by CR3 when the file has no switch records", () => {
  // Where the PIP to B's CR3 is: B is seen running just after it.
  const probe = run(["--jsonl", perfData("probe.data", TRACE_TSC + 0x1000000000n)]);
  const pips = probe.out
    .split("\n")
    .filter((l) => l.includes('"text":"[paging'))
    .map((l) => JSON.parse(l) as { tsc: string; text: string });
  assert.equal(pips[0]?.text, "[paging, cr3: 000000000000b000]");
  const r = run([perfData("pip.data", BigInt(pips[0]!.tsc) + 1n)]);
  const head = execIps([...a1, ...k1]);
  const tail = execIps([...k2, ...a2, ...k3, ...b2]);
  const b1ips = execIps(b1);
  assert.deepEqual(r.ips.slice(0, head.length), head);
  assert.deepEqual(r.ips.slice(-tail.length), tail);
  const middle = r.ips.slice(head.length, -tail.length);
  assert.ok(middle.length > 1000 && middle.length < b1ips.length, `${middle.length} of B's first turn`);
  assert.deepEqual(middle, b1ips.slice(-middle.length));
  // Who runs: A, nobody known (B's CR3 before B is seen), B, A, B.
  assert.deepEqual(
    r.out.split("\n").filter((l) => /^\[cpu 0 pid/.test(l)),
    [
      "[cpu 0 pid 100 tid 100]",
      "[cpu 0 pid -1 tid -1]",
      "[cpu 0 pid 200 tid 200]",
      "[cpu 0 pid 100 tid 100]",
      "[cpu 0 pid 200 tid 200]",
    ],
  );
});

const HASE = "real/hase";
const RUN = "2018-05/control_flow-20180515T180451";

test("a HASE capture without its switch records decodes as with them", {
  skip: skipUnlessCorpus(HASE, RUN),
}, () => {
  // Turn every SWITCH and SWITCH_CPU_WIDE record into a FINISHED_ROUND (same size, no content read).
  const file = new Uint8Array(readFileSync(corpusPath(HASE, RUN, "perf.data.1")!));
  const view = new DataView(file.buffer);
  const start = Number(view.getBigUint64(40, true));
  const end = start + Number(view.getBigUint64(48, true));
  let hidden = 0;
  for (let p = start; p < end; ) {
    const type = view.getUint32(p, true);
    const size = view.getUint16(p + 6, true);
    if (type === 14 || type === 15) {
      view.setUint32(p, 68, true);
      hidden++;
    }
    p += size + (type === 71 ? Number(view.getBigUint64(p + 8, true)) : 0);
  }
  assert.ok(hidden > 100);
  writeFileSync(join(dir, "no-switch.data"), file);
  const io = captureIo(corpusPath(HASE)!);
  assert.equal(runPerf(["--symfs", `${RUN}/binaries`, join(dir, "no-switch.data")], io, EMPTY_HOME), 0);
  assert.equal(io.err.join(""), "");
  const out = io.out.join("");
  const want = readFileSync(
    corpusPath(HASE, "reference", "control_flow-20180515.perf-script-insn.txt")!,
    "utf8",
  )
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => BigInt(`0x${l.trim()}`).toString(16).padStart(16, "0"));
  assert.deepEqual(
    out.split("\n").filter((l) => /^[0-9a-f]{16}$/.test(l)),
    want,
  );
  assert.deepEqual(
    out.split("\n").filter((l) => l.startsWith("[cpu")),
    ["[cpu 1 pid 11181 tid 11181]"],
  );
});
