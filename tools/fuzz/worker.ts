/**
 * Runs cases in this process: ptkit commands through `runCli` with the real file
 * system and captured output, library drivers directly. As a child of run.ts it takes
 * cases over IPC and answers each; the parent kills it on a hang or too much memory
 * and starts another.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { FileDiagnostic } from "../../src/base/diagnostic.js";
import { ErrorCode } from "../../src/base/errors.js";
import { commandIo, runCli } from "../../src/cli/ptkit.js";
import { defaultDecoderConfig, EventDecoder, PtEvent } from "../../src/event/index.js";
import { parseElf } from "../../src/image/elf.js";
import { readExecBinary } from "../../src/unit/exec/binary.js";
import { readExecJsonl } from "../../src/unit/exec/jsonl.js";
import type { Execution } from "../../src/unit/exec/types.js";
import { generate } from "../../src/unit/gen/index.js";
import { ALL_MSRS, MsrFile, PRESET_NAMES, presetCapabilities } from "../../src/unit/index.js";
import { EXEC_JSONL } from "./seeds.js";
import { type Failure, hasStack } from "./triage.js";
import { type Case, type CaseResult, INPUT, SCRATCH } from "./types.js";

/** Output kept for messages; beyond it only a hash and a length are kept (memory stays bounded). */
const KEEP = 64 * 1024;

/** What a command printed: a hash of everything, the start of stderr. */
export class Captured {
  hash = 0x811c9dc5;
  length = 0;
  err = "";

  add(text: string, isErr: boolean): void {
    let h = this.hash;
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
    this.hash = h >>> 0;
    this.length += text.length;
    if (isErr && this.err.length < KEEP) this.err += text.slice(0, KEEP - this.err.length);
  }
}

/** The path the input has in argv, written (or, for a directory case, made) under `scratch`. */
function placeInput(c: Case, scratch: string, bytes: Uint8Array): string {
  if (c.inputIsDir) {
    const dir = join(scratch, "a-directory");
    mkdirSync(dir, { recursive: true });
    return dir;
  }
  const path = join(scratch, c.inputName);
  writeFileSync(path, bytes);
  return path;
}

export function substitute(argv: readonly string[], input: string, scratch: string): string[] {
  return argv.map((a) => a.replace(INPUT, input).replaceAll(SCRATCH, scratch));
}

/** Run ptkit in this process; returns the exit code and what it printed. */
async function runCommand(
  c: Case,
  scratch: string,
  bytes: Uint8Array,
): Promise<{ code: number; out: Captured }> {
  const input = placeInput(c, scratch, bytes);
  const argv = substitute(c.argv!, input, scratch);
  process.chdir(c.cwd);
  const out = new Captured();
  const io = {
    ...commandIo(),
    stdout: (t: string) => out.add(t, false),
    stderr: (t: string) => out.add(t, true),
    stderrIsTty: false,
  };
  const code = await runCli(argv, io);
  return { code, out };
}

/** What must not change with the bytes past the end. */
function outcome(out: Captured, code: number): string {
  return `${code} ${out.hash} ${out.length}`;
}

/** Judge a ptkit run: exit 70 and stack traces fail. */
export function judgeCommand(format: string, code: number, stderr: string): Failure | undefined {
  if (code === 70) return { format, kind: "internal", detail: stderr };
  if (hasStack(stderr)) return { format, kind: "stack", detail: stderr };
  return undefined;
}

export async function runCase(c: Case, scratch: string): Promise<CaseResult> {
  try {
    const failure = c.argv ? await commandCase(c, scratch) : driverCase(c);
    return failure ? { ok: false, failure } : { ok: true };
  } catch (e) {
    return { ok: false, failure: { format: c.format, kind: "uncaught", detail: errorText(e) } };
  }
}

async function commandCase(c: Case, scratch: string): Promise<Failure | undefined> {
  const first = await runCommand(c, scratch, c.input);
  const failed = judgeCommand(c.format, first.code, first.out.err);
  if (failed || !c.variant) return failed;
  const second = await runCommand(c, scratch, c.variant);
  const again = judgeCommand(c.format, second.code, second.out.err);
  if (again) return again;
  const a = outcome(first.out, first.code);
  const b = outcome(second.out, second.code);
  if (a === b) return undefined;
  return {
    format: c.format,
    kind: "past-end",
    detail: `${c.argv!.join(" ")}: output (exit code, hash, length) ${a} became ${b} with other bytes past the end`,
  };
}

function errorText(e: unknown): string {
  return e instanceof Error ? (e.stack ?? `${e.name}: ${e.message}`) : `non-Error thrown: ${String(e)}`;
}

/** Library errors that report bad input the way their layer promises (PtError, ElfError, PerfError, ...). */
function isLayerError(e: unknown): boolean {
  return e instanceof FileDiagnostic;
}

/** A library call: only the layer's own error classes may come out. */
function driverCase(c: Case): Failure | undefined {
  try {
    switch (c.driver) {
      case "event":
        return eventDriver(c);
      case "elf":
        parseElf(c.input);
        return undefined;
      case "exec-jsonl":
        generateFrom(readExecJsonl(c.input), 0x2e0d);
        return undefined;
      case "exec-binary":
        generateFrom(readExecBinary(c.input), 0x2e0d);
        return undefined;
      case "msr":
        return msrDriver(c.input);
    }
  } catch (e) {
    if (isLayerError(e)) return undefined;
    throw e;
  }
  return undefined;
}

/** Decode events to the end, resynchronising after errors, with a bound on the steps. */
function eventDriver(c: Case): Failure | undefined {
  const bytes = c.input;
  const dec = new EventDecoder(bytes, defaultDecoderConfig());
  const ev = new PtEvent();
  let status = dec.syncForward();
  for (let steps = 0; steps < 64 * (bytes.length + 16); steps++) {
    if (status === -ErrorCode.Eos) return undefined;
    if (status === -ErrorCode.Internal)
      return {
        format: c.format,
        kind: "uncaught",
        detail: `InternalStatusError: event decoder at offset ${dec.offset}`,
      };
    status = status < 0 ? dec.syncForward() : dec.next(ev);
  }
  return {
    format: c.format,
    kind: "hang",
    detail: `event decoder: no end after ${64 * (bytes.length + 16)} steps`,
  };
}

/** Trace an execution with IA32_RTIT_CTL = ctl on the default preset. */
function generateFrom(x: Execution, ctl: number, msrs = new MsrFile(presetCapabilities("skylake"))): void {
  if (!msrs.traceEn) msrs.wrmsr(0x570, 0, ctl);
  generate(x, { msrs });
}

let sampleExec: Execution | undefined;

/** The msr driver's input: a preset byte, then WRMSRs of 9 bytes (MSR index, value LE); then a trace. */
function msrDriver(bytes: Uint8Array): Failure | undefined {
  const msrs = new MsrFile(presetCapabilities(PRESET_NAMES[(bytes[0] ?? 0) % PRESET_NAMES.length]!));
  for (let at = 1; at + 9 <= bytes.length; at += 9) {
    const i = bytes[at]!;
    // Mostly Intel PT MSRs; an index past them is a nearby address with no MSR behind it.
    const address = i < 0xf0 ? ALL_MSRS[i % ALL_MSRS.length]! : 0x550 + (i & 0x3f);
    const view = new DataView(bytes.buffer, bytes.byteOffset + at + 1, 8);
    msrs.wrmsr(address, view.getUint32(4, true), view.getUint32(0, true));
  }
  sampleExec ??= readExecJsonl(EXEC_JSONL);
  if (msrs.traceEn) generate(sampleExec, { msrs });
  return undefined;
}

/** The child's loop: a case in, a result out; `argv[2]` is its scratch directory. */
function serve(scratch: string): void {
  mkdirSync(scratch, { recursive: true });
  // ptkit perf looks for binaries under ~/.debug: not the host's (real-process cases do the same).
  process.env.HOME = "/nonexistent-home";
  // One case at a time, in order: a command case awaits ptkit's main, and cases change
  // the working directory.
  let queue = Promise.resolve();
  process.on("message", (c: Case) => {
    queue = queue.then(async () => {
      const before = process.cpuUsage();
      const result = await runCase(c, scratch);
      const cpu = process.cpuUsage(before);
      process.send!({ index: c.index, result, cpuMs: (cpu.user + cpu.system) / 1000 });
    });
  });
}

if (process.send && process.argv[2] === "--worker") serve(process.argv[3]!);
