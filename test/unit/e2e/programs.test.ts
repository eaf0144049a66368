/**
 * End to end: real programs (test/fixtures/programs, built with gcc and run under
 * valgrind's lackey) are converted to executions, traced by the packet generator under
 * many configurations, and decoded back by libipt's instruction flow decoder (through
 * the harness's insn mode). The decoded instructions must be exactly the executed ones
 * minus what the configuration filters out (expected.ts). ptkit's own instruction
 * decoder (src/flow) must give the same.
 */
// test:quick skips this file: real programs run under valgrind.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { parseSimulateArgs } from "../../../src/cli/simulate/options.js";
import { InsnFlag } from "../../../src/isa/index.js";
import { collectStats, PACKET_NAMES, PacketType, type TraceStats } from "../../../src/packet/index.js";
import { DEFAULT_CR3 } from "../../../src/unit/exec/lackey.js";
import {
  ExecBuilder,
  ExecEvent,
  type Execution,
  INFO_ZLC,
  infoClass,
  infoSize,
} from "../../../src/unit/exec/types.js";
import { generate } from "../../../src/unit/gen/generator.js";
import { MsrFile, presetCapabilities } from "../../../src/unit/index.js";
import { buildLibiptHarness, runInsnDecoder } from "../../../tools/libipt/harness.js";
import { type TraceFilter, tracedIps } from "../gen/oracle.js";
import { type Program, programs } from "./programs.js";
import { decodeWithPtkit } from "./ptkit-insn.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-e2e-"));
const harness = buildLibiptHarness(dir);
if ("error" in harness) throw new Error(harness.error);
const built = programs();
const skip = "skip" in harness ? harness.skip : "skip" in built ? built.skip : false;

interface Config {
  name: string;
  /** `ptkit simulate` options. */
  options: string[];
  filter: TraceFilter;
  /** The execution traced, if not the program's own. */
  execution?: Execution;
  /** What the trace must hold for the options to have had their effect: a complaint, or "". */
  check?: (stats: TraceStats, p: Program) => string;
}

const has = (stats: TraceStats, ...types: PacketType[]) =>
  types
    .filter((t) => stats.counts[t] === 0)
    .map((t) => `no ${PACKET_NAMES[t]} packets`)
    .join(", ");

const hex = (v: bigint) => `0x${v.toString(16)}`;
/** The kernel's CR3 when it has its own (page-table isolation style). */
const KERNEL_CR3 = DEFAULT_CR3 - 0x1000n;

/** The execution with the kernel on a CR3 of its own: a `cr3` record after every `cpl` record. */
function withKernelCr3(x: Execution): Execution {
  const b = new ExecBuilder();
  const split = (v: bigint): [number, number] => [Number(v >> 32n), Number(v & 0xffffffffn)];
  let e = 0;
  for (let i = 0; i <= x.insnCount; i++) {
    for (; e < x.eventCount && x.evAt[e] === i; e++) {
      const kind = x.evKind[e]! as ExecEvent;
      if (kind === ExecEvent.End) b.end(x.evHi[e]!, x.evLo[e]!);
      else b.event(kind, x.evA[e], x.evB[e], x.evHi[e], x.evLo[e], x.evToHi[e], x.evToLo[e]);
      if (kind === ExecEvent.Cpl) b.cr3(...split(x.evA[e] === 0 ? KERNEL_CR3 : DEFAULT_CR3));
    }
    if (i === x.insnCount) break;
    const info = x.info[i]!;
    b.insn(
      x.ipHi[i]!,
      x.ipLo[i]!,
      infoSize(info),
      infoClass(info),
      info & INFO_ZLC ? InsnFlag.ZeroLengthCall : 0,
    );
  }
  return b.build();
}
const ipOf = (x: Execution, i: number) => (BigInt(x.ipHi[i]!) << 32n) | BigInt(x.ipLo[i]!);

/** A range over the middle of the program's user code: IPs from the 30th to the 60th percentile. */
function middleRange(x: Execution): [bigint, bigint] {
  const ips = [...new Set(Array.from({ length: x.insnCount }, (_, i) => ipOf(x, i)))]
    .filter((v) => v < 0xffff800000000000n)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return [ips[Math.floor(ips.length * 0.3)]!, ips[Math.floor(ips.length * 0.6)]!];
}

/** Where the first taken branch after the middle of the run lands. */
function landingAfterMiddle(x: Execution): bigint {
  for (let i = x.insnCount >> 1; i + 1 < x.insnCount; i++) {
    const next = ipOf(x, i + 1);
    if (next !== ipOf(x, i) + BigInt(x.info[i]! & 0xf) && next < 0xffff800000000000n) return next;
  }
  throw new Error("no taken branch in the second half");
}

function configs(p: Program): Config[] {
  const x = p.lackey.execution;
  const all = { os: true, user: true };
  const [from, to] = middleRange(x);
  const stop = landingAfterMiddle(x);
  return [
    { name: "default", options: [], filter: all, check: (s) => has(s, PacketType.Tnt8, PacketType.Tip) },
    {
      name: "no RET compression",
      options: ["--no-retc"],
      filter: all,
      check: (s, p) => {
        const compressed = collectStats(trace(p, configs(p)[0]!)).counts[PacketType.Tip]!;
        return s.counts[PacketType.Tip]! > compressed ? "" : "no more TIPs than with RET compression";
      },
    },
    { name: "user only", options: ["--user"], filter: { os: false, user: true } },
    { name: "kernel only", options: ["--kernel"], filter: { os: true, user: false } },
    {
      name: "timing, PSB every 2K",
      options: ["--tsc", "--mtc", "3", "--cyc", "0", "--psb-freq", "0"],
      filter: all,
      check: (s) =>
        has(s, PacketType.Tsc, PacketType.Mtc, PacketType.Cyc, PacketType.Tma) ||
        (s.psbOffsets.length > s.bytes / 4096 ? "" : `${s.psbOffsets.length} PSBs in ${s.bytes} bytes`),
    },
    {
      name: "PSB every 64K",
      options: ["--psb-freq", "5"],
      filter: all,
      check: (s) =>
        s.psbOffsets.length <= 1 + s.bytes / 65536 ? "" : `${s.psbOffsets.length} PSBs in ${s.bytes} bytes`,
    },
    {
      name: "user only, no RET compression, timing",
      options: ["--user", "--no-retc", "--tsc", "--mtc", "0", "--cyc", "2", "--psb-freq", "1"],
      filter: { os: false, user: true },
      check: (s) =>
        has(s, PacketType.Tsc, PacketType.Mtc, PacketType.Cyc, PacketType.TipPgd, PacketType.TipPge),
    },
    {
      name: "CR3 filter, matching",
      options: ["--cr3-filter", hex(DEFAULT_CR3)],
      filter: { ...all, cr3: DEFAULT_CR3 },
    },
    { name: "CR3 filter, other CR3", options: ["--cr3-filter", "0x1000"], filter: { ...all, cr3: 0x1000n } },
    {
      name: "kernel on its own CR3, CR3 filter on the user's",
      options: ["--cr3-filter", hex(DEFAULT_CR3)],
      filter: { ...all, cr3: DEFAULT_CR3 },
      execution: withKernelCr3(x),
      check: (s) => has(s, PacketType.Pip, PacketType.TipPgd, PacketType.TipPge),
    },
    {
      name: "kernel on its own CR3, CR3 filter on the kernel's",
      options: ["--cr3-filter", hex(KERNEL_CR3)],
      filter: { ...all, cr3: KERNEL_CR3 },
      execution: withKernelCr3(x),
      check: (s) => has(s, PacketType.Pip, PacketType.TipPgd, PacketType.TipPge),
    },
    {
      name: `IP filter ${hex(from)}-${hex(to)}`,
      options: ["--filter", `${hex(from)}-${hex(to)}`],
      filter: { ...all, filters: [[from, to]] },
    },
    {
      name: `TraceStop at ${hex(stop)}`,
      options: ["--stop", `${hex(stop)}-${hex(stop)}`],
      filter: { ...all, stops: [[stop, stop]] },
    },
  ];
}

/** The trace of `p` under the configuration. */
function trace(p: Program, c: Config): Uint8Array {
  const args = parseSimulateArgs([...c.options, "-o", "-", "-"]);
  if (!("writes" in args)) throw new Error(`bad options ${c.options.join(" ")}`);
  const msrs = new MsrFile(presetCapabilities(args.preset));
  for (const w of args.writes) {
    const fault = msrs.writeMsr(w.msr, w.value);
    if (fault) throw new Error(`${c.name}: ${fault.msr}: ${fault.field}: ${fault.reason}`);
  }
  return generate(c.execution ?? p.lackey.execution, { msrs }).bytes;
}

/** "" when `got` is `want`, else where they part. */
function difference(
  decoder: string,
  got: readonly string[],
  want: readonly string[],
  errors: string[],
): string {
  let same = 0;
  while (same < got.length && same < want.length && got[same] === want[same]) same++;
  if (same === got.length && same === want.length) return "";
  return (
    `${decoder}: ${got.length} decoded, ${want.length} expected, first difference at ${same}: ` +
    `${got[same]} vs ${want[same]}; errors: ${errors.slice(0, 5).join(", ") || "none"}`
  );
}

describe("real programs decode back to what they executed", { skip }, () => {
  if (skip || !("programs" in built) || !("bin" in harness)) return;
  for (const p of built.programs) {
    describe(p.name, () => {
      test("ran and converted cleanly", () => {
        assert.equal(p.status, 0, `${p.name} exited with ${p.status}`);
        assert.equal(p.lackey.fatal, undefined, JSON.stringify(p.lackey.fatal));
        assert.deepEqual(p.lackey.issues, []);
        assert.deepEqual(p.image.problems, []);
        // Lackey logs every instruction it counts, except those it loses at a fault.
        const { insnLines, insns, repIterations, faults, recovered } = p.lackey.stats;
        assert.ok(insnLines <= p.guestInstrs && insnLines >= p.guestInstrs - faults - recovered);
        // Every line is an instruction, a REP iteration, or a faulting instruction left out.
        assert.ok(insns - recovered + repIterations >= p.guestInstrs - faults);
        assert.ok(insns - recovered + repIterations <= p.guestInstrs);
        assert.equal(p.lackey.stats.guessed, 0);
      });
      for (const c of configs(p)) {
        test(c.name, () => {
          const bytes = trace(p, c);
          const file = join(dir, `${p.name}-${c.name.replace(/[^a-z0-9]+/gi, "_")}.pt`);
          writeFileSync(file, bytes);
          const want = tracedIps(c.execution ?? p.lackey.execution, c.filter);
          const out = runInsnDecoder(harness.bin, file, p.maps);
          assert.ok(Array.isArray(out), !Array.isArray(out) ? out.error : "");
          const libipt = out.filter((l) => l.startsWith("I ")).map((l) => l.split(" ")[1]!);
          const ptkit = decodeWithPtkit(bytes, p.image.image);
          const problems = [
            difference(
              "libipt",
              libipt,
              want,
              out.filter((l) => /^[EX] /.test(l)),
            ),
            difference("ptkit", ptkit.ips, want, ptkit.errors),
            c.check?.(collectStats(bytes), p) ?? "",
          ].filter((d) => d !== "");
          assert.deepEqual(problems, []);
        });
      }
    });
  }
});
