/**
 * One end-to-end case of the generator: a random program (real code) run under a
 * random configuration, traced (with a CPU profile, or the SDM's reading), then
 * decoded by Debian's libipt (tools/libipt/harness.c --insn) and by ptkit's
 * instruction flow decoder, both told the CPU when there is one; both must give back
 * exactly the executed instructions the configuration traces (oracle.ts), with an
 * internal-buffer overflow a subsequence of them.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { DecoderConfig } from "../../../src/event/config.js";
import { generate } from "../../../src/unit/gen/index.js";
import type { CpuProfile } from "../../../src/unit/index.js";
import { runInsnDecoder } from "../../../tools/libipt/harness.js";
import { runInsns } from "../../flow/run.js";
import { msrs, packetList } from "./helpers.js";
import { tracedIps } from "./oracle.js";
import { programSize, randomCase } from "./random-case.js";
import { programImage, randomProgram, randomRun, USER_BASE } from "./random-program.js";

export interface CaseOptions {
  /** The libipt harness, a directory for the files, and the stand-in kernel's code file there. */
  bin: string;
  dir: string;
  kernel: string;
  /** Names the case's files. */
  tag: string;
  /** The CPU profile to trace with (default the SDM's), and the CPU ("family/model") and config to decode with. */
  profile?: CpuProfile;
  cpu?: string;
  config?: DecoderConfig;
  /** Event Trace: EventEn=1 on a CPU with it, and a run with faults, kernel interrupts and IF changes. */
  eventTrace?: boolean;
}

/** `a` is a subsequence of `b`. */
function subsequence(a: readonly string[], b: readonly string[]): boolean {
  let j = 0;
  for (const x of a) {
    while (j < b.length && b[j] !== x) j++;
    if (j++ >= b.length) return false;
  }
  return true;
}

/**
 * Case `seed`: a random program, its run and a random configuration, traced with
 * `profile` (default the SDM's reading).
 */
export function generateCase(seed: number, profile?: CpuProfile, eventTrace = false) {
  const program = randomProgram(seed, programSize(seed));
  const exec = randomRun(program, seed, {
    insns: 3000,
    interrupts: eventTrace ? 0.03 : 0.01,
    wildReturns: 0.05,
    events: eventTrace ? { faults: 0.5, kernelInterrupts: 0.2 } : undefined,
  });
  const c = randomCase(seed, program.code.length);
  const m = msrs({
    preset: "skylake",
    caps: { ptwrite: true, eventTrace },
    ctl: eventTrace ? { ...c.ctl, EventEn: 1 } : c.ctl,
    ranges: c.ranges,
    cr3Match: c.cr3Match,
  });
  const res = generate(exec, {
    msrs: m,
    profile,
    cyclesPerInsn: c.cyclesPerInsn,
    longTnt: c.longTnt,
    internalBuffer: c.internalBuffer,
  });
  return { program, exec, c, res };
}

/** Run case `seed` and check both decoders; the trace's packet list. */
export function checkGeneratedCase(seed: number, o: CaseOptions): string[] {
  const { program, exec, c, res } = generateCase(seed, o.profile, o.eventTrace);
  const list = packetList(res.bytes);
  assert.ok(
    !list.some((l) => l.startsWith("error")),
    `ptkit cannot decode: ${list.find((l) => l.startsWith("error"))}`,
  );
  const code = join(o.dir, `code-${o.tag}.bin`);
  const trace = join(o.dir, `trace-${o.tag}.pt`);
  writeFileSync(code, program.code);
  writeFileSync(trace, res.bytes);
  const out = runInsnDecoder(
    o.bin,
    trace,
    [`${code}:${USER_BASE}`, `${o.kernel}:0xffffffff81000000`],
    o.cpu,
    o.eventTrace ? ["--skip-event-trace"] : [],
  );
  assert.ok(Array.isArray(out), JSON.stringify(out));
  const errors = out.filter((l) => l.startsWith("E ") || l.startsWith("X "));
  const got = out.filter((l) => l.startsWith("I ")).map((l) => l.split(" ")[1]!);
  const image = programImage(program);
  const ours = runInsns(res.bytes, { image, config: o.config }).ips.map((ip) => `0x${ip.toString(16)}`);
  const want = tracedIps(exec, c.filter);
  const config = JSON.stringify(c, (_, v) => (typeof v === "bigint" ? `0x${v.toString(16)}` : v));
  const where = `trace ${trace}${o.cpu ? `, --cpu ${o.cpu}` : ""}, config ${config}`;
  for (const [who, ips] of [
    ["libipt", got],
    ["ptkit", ours],
  ] as const) {
    if (res.overflows > 0) {
      assert.ok(
        subsequence(ips, want),
        `${who}'s instructions are not a subsequence of the executed ones; ${where}`,
      );
      continue;
    }
    const k = ips.findIndex((ip, j) => ip !== want[j]);
    if (k >= 0 || ips.length !== want.length) {
      assert.fail(
        `${who}: first difference at ${k}: ${ips[k]} for ${want[k]} (${ips.length} vs ${want.length}); ${where}`,
      );
    }
  }
  if (res.overflows === 0) assert.deepEqual(errors, [], where);
  return list;
}
