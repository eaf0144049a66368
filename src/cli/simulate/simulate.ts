/** `ptkit simulate`: an execution in, the Intel PT trace the processor would write out. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { diagnosticLine } from "../../base/diagnostic.js";
import { PtError } from "../../base/errors.js";
import { runUnderLackey } from "../../node/valgrind.js";
import { type FileKind, fileKind, HEAD_BYTES, ioErrorText, openError } from "../../session/file-kind.js";
import type { SessionIo } from "../../session/io.js";
import { readExecBinary, writeExecBinary } from "../../unit/exec/binary.js";
import { readExecJsonl, writeExecJsonl } from "../../unit/exec/jsonl.js";
import { LackeyConverter, type PageTouches } from "../../unit/exec/lackey.js";
import { applyPerfEnv } from "../../unit/exec/perf-env.js";
import { KERNEL_ADDRESS, KERNEL_CODE, ProcessImage } from "../../unit/exec/process-image.js";
import type { Execution } from "../../unit/exec/types.js";
import { generate } from "../../unit/gen/index.js";
import {
  GpRule,
  MsrFile,
  msrName,
  PRESET_NAMES,
  PRESETS,
  presetCapabilities,
  presetProfile,
} from "../../unit/index.js";
import { argFileText } from "../arg-files.js";
import { Progress } from "../progress.js";
import { KERNEL_ELF_CODE_AT, kernelElf } from "./kernel.js";
import { MemoryOutput } from "./memory.js";
import { type ExecFormat, parseSimulateArgs, type SimulateArgs } from "./options.js";

const HELP = `usage: ptkit simulate [<options>] -o <trace.pt> <execution>
       ptkit simulate [<options>] -o <trace.pt> -- <command> [<argument>...]

Generate the Intel PT trace a processor would write for an execution: a ptkit
execution (JSON Lines or binary, see src/unit/exec/types.ts), a valgrind lackey
log, or a program run under valgrind on the spot (valgrind must be installed).
The trace unit is configured by its MSR values and/or named options, checked as
the processor checks WRMSR (#GP, naming the field).

input and output:
  -o, --output FILE       the raw trace (required).
  --format F              jsonl, binary or lackey (default: from the contents).
  --save-exec FILE        also write the execution (.jsonl: JSON Lines, else binary).
  --save-log FILE         keep valgrind's log (with -- <command>).
  --cr3 VALUE             CR3 of the process in a lackey log (default 0x3d4e5000).
  --env perf-user|perf-kernel|perf-all[:toggle|:no-toggle][:no-data]
                          perf's environment around the program (perf record -e
                          intel_pt//u, //k, //uk; sets User/OS unless --user or
                          --kernel is given): tracing enabled in the kernel during
                          exec; demand-paging faults at the first fetch from a code
                          page and the first load or store to a data page of the
                          program's segments, with Linux's fault-around and copy on
                          write (no-data: code pages only); each kernel visit takes
                          time; toggle: TraceEn cleared and set in every kernel
                          visit (default with --cpu broadwell, as its captures show).
                          perf-kernel traces only the kernel's side: one stand-in
                          instruction per visit (exec's return, each system call and
                          page fault), TIP.PGE into it and TIP.PGD out of it; the
                          program's own code writes nothing. Not modelled: the real
                          kernel's code paths, the stack, heap and mmap'ed memory
                          (valgrind's own), interrupts, other processes. See
                          src/unit/exec/perf-env.ts.
  --cpu NAME              capabilities (CPUID 14H) and behaviour profile of:
                          ${PRESET_NAMES.join(", ")}
                          (default: skylake's capabilities with the SDM's choices
                          where it leaves them open; see README "CPU behaviour profiles").

configuration (named options; IA32_RTIT_CTL defaults to TraceEn, BranchEn, OS, User,
and ToPA on a CPU without single-range output):
  --user                  trace CPL > 0 only (OS=0).
  --kernel                trace CPL 0 only (User=0).
  --no-retc               no RET compression (DisRETC=1).
  --no-branch             no COFI packets (BranchEn=0).
  --psb-freq N            PSB every 2K << N bytes (PSBFreq).
  --mtc N                 MTC packets when crystal clock bit N toggles (MTCEn, MTCFreq).
  --cyc N                 cycle-accurate mode, threshold encoding N (CYCEn, CycThresh).
  --tsc                   TSC packets (TSCEn).
  --ptw, --fup-on-ptw     PTWRITE packets (PTWEn), with FUPs (FUPonPTW).
  --pwr-evt               power event packets (PwrEvtEn).
  --event-trace           Event Trace: CFE/EVD packets, IF in MODE.Exec (EventEn;
                          needs CPUID.14H.0:EBX[7], which no preset has yet).
  --cr3-filter VALUE      trace only while CR3 = VALUE (CR3Filter, IA32_RTIT_CR3_MATCH).
  --filter FROM-TO        trace only in [FROM, TO] (next ADDRn_CFG = 1, ADDRn_A/B);
                          may be repeated.
  --stop FROM-TO          stop tracing on reaching [FROM, TO] (next ADDRn_CFG = 2).

configuration (MSR values; named options apply on top of --ctl):
  --ctl V  --status V  --cr3-match V  --addr0-a V  --addr0-b V ... --addr3-b V

output to memory (the trace file then holds what is read back, oldest byte first):
  --single-range BASE:SIZE  one circular region (SIZE a power of two >= 128).
  --topa SIZES            a ToPA ring of regions (4K .. 128M) at physical 0x100000,
                          each optionally +int and/or +stop: 4K,8K+int,4K+stop.
  --memory PREFIX         write the memory image: PREFIX.json (layout, output MSRs)
                          and PREFIX.region<i>.bin, PREFIX.table.bin.

  -h, --help              this text.

For a lackey log or a command, the stand-in kernel is written beside the trace
(<trace>.kernel, an ELF file) with the image for decoding as ptkit flow options
(<trace>.args, --elf FILE[:BASE] lines, so function names come with them); the
decode command is printed.

examples:
  ptkit simulate -o ls.pt -- /bin/ls /
  ptkit simulate --user --no-retc --psb-freq 3 -o trace.pt run.jsonl
  ptkit simulate --tsc --mtc 3 --cyc 1 --save-exec run.bin -o t.pt -- ./a.out
  ptkit simulate --ctl 0x2e0d --filter 0x401000-0x401fff -o t.pt lackey.log
  ptkit simulate --topa 4K,4K,8K+stop --memory mem -o t.pt run.bin
`;

/** The usage lines of {@link HELP}. */
const USAGE = HELP.slice(0, HELP.indexOf("\n\n"));

/** Read lackey logs in pieces this big (logs run to gigabytes). */
const CHUNK = 1 << 22;

export function runSimulate(argv: readonly string[], io: SessionIo): number {
  const args = parseSimulateArgs(argv);
  if ("help" in args) {
    io.stdout(HELP);
    return 0;
  }
  if ("error" in args) {
    io.stderr(`ptkit simulate: ${args.error}.\n${USAGE}\nUse --help or -h for help.\n`);
    return 1;
  }
  try {
    return simulate(args, io);
  } catch (e) {
    const { path, syscall } = e as NodeJS.ErrnoException;
    // A file that cannot be written (-o naming a directory, ...) or read: the system error names it.
    if (!(e instanceof PtError) && path !== undefined) {
      io.stderr(
        `ptkit simulate: cannot ${syscall === "read" ? "read" : "write"} ${path}: ${ioErrorText(e)}.\n`,
      );
      return 1;
    }
    if (!(e instanceof PtError)) throw e;
    io.stderr(`ptkit simulate: ${e.message}.\n`);
    return 1;
  }
}

function simulate(args: SimulateArgs, io: SessionIo): number {
  const msrs = new MsrFile(presetCapabilities(args.preset));
  for (const w of args.writes) {
    const fault = msrs.writeMsr(w.msr, w.value);
    if (fault) {
      const name = msrName(w.msr) ?? `MSR 0x${w.msr.toString(16)}`;
      io.stderr(
        `ptkit simulate: WRMSR ${name} = 0x${w.value.toString(16)} (${w.option}): #GP on ${args.preset}: ` +
          `${fault.field}: ${fault.reason}${outputHint(args, fault.rule)}.\n`,
      );
      return 1;
    }
  }

  const input = loadExecution(args, io);
  if (typeof input === "string") {
    io.stderr(`ptkit simulate: ${input}\n`);
    return 1;
  }
  const { image } = input;
  let execution = input.execution;
  let envLine: string | undefined;
  if (args.env !== undefined) {
    const env = applyPerfEnv(execution, {
      ctlHi: msrs.ctlHi,
      ctlLo: msrs.ctlLo,
      toggleEveryVisit: args.env.toggleEveryVisit,
      ...(image === undefined ? {} : { segments: image.segments }),
      ...(args.env.dataFaults ? { dataTouches: input.dataTouches } : {}),
    });
    execution = env.execution;
    const code = env.faults.length - env.dataFaults;
    envLine = `env          ${args.env.name}: ${code} code page faults, ${env.dataFaults} data page faults, ${env.toggles} TraceEn toggles`;
  }
  if (args.saveExec !== undefined) {
    const bytes = args.saveExec.endsWith(".jsonl")
      ? new TextEncoder().encode(writeExecJsonl(execution))
      : writeExecBinary(execution);
    io.writeFile(args.saveExec, bytes);
  }

  const memory = args.layout === undefined ? undefined : new MemoryOutput(args.layout, msrs);
  const start = performance.now();
  // Without --cpu, the SDM's reading (what the bundled sample and older traces were made with).
  const profile = args.profiled ? presetProfile(args.preset) : undefined;
  const result = generate(
    execution,
    memory === undefined ? { msrs, profile } : { msrs, profile, output: memory.unit },
  );
  const seconds = (performance.now() - start) / 1000;
  const back = memory?.readBack();
  io.writeFile(args.output, back?.bytes ?? result.bytes);

  const lines = [
    `instructions ${execution.insnCount}`,
    `events       ${execution.eventCount}`,
    ...(envLine === undefined ? [] : [envLine]),
    `generated    ${result.bytes.length} bytes in ${(seconds * 1000).toFixed(1)} ms`,
  ];
  if (memory !== undefined && back !== undefined) {
    const how = [
      back.wrapped ? `wrapped, from the first whole PSB (${back.skipped} older bytes skipped)` : "no wrap",
      ...back.cutByStop.map((c) => `stopped at the end of the region at 0x${c.regionBase.toString(16)}`),
      ...(memory.unit.lastError ? [`operational error: ${memory.unit.lastError.reason}`] : []),
    ];
    lines.push(`memory       ${args.layout!.kind}: ${how.join("; ")}`);
    if (args.memory !== undefined) {
      for (const f of memory.files(args.memory, back)) io.writeFile(f.name, f.bytes);
      lines.push(`memory image ${args.memory}.json`);
    }
  }
  lines.push(`trace        ${(back?.bytes ?? result.bytes).length} bytes -> ${args.output}`);
  if (result.overflows > 0)
    lines.push(`overflows    ${result.overflows} (${result.droppedBytes} bytes dropped)`);
  for (const f of result.faults)
    lines.push(
      `fault        record ${f.record}: WRMSR ${f.fault.msr}: #GP: ${f.fault.field}: ${f.fault.reason}`,
    );
  if (image !== undefined) {
    const kernelFile = `${args.output}.kernel`;
    io.writeFile(kernelFile, kernelElf());
    // The image's options go to a file: with their paths they run to hundreds of characters.
    const argsFile = `${args.output}.args`;
    const command = `ptkit flow @${argsFile} --pt ${args.output}`;
    // For tools that take code as file ranges (ptxed --raw, the libipt harness's --map): in comments.
    const code = `${kernelFile}:0x${KERNEL_ELF_CODE_AT.toString(16)}-0x${(KERNEL_ELF_CODE_AT + KERNEL_CODE.length).toString(16)}`;
    const ranges = [`${code}:0x${KERNEL_ADDRESS.toString(16)}`, ...image.rawArgs(kernelFile).slice(1)];
    const text =
      argFileText(`the image of ${args.output}: ${command}`, [
        // The CPU, for its errata (BDM70's PSB+ is in the profile of most presets).
        ...(args.profiled ? ["--cpu", presetCpu(args.preset)] : []),
        ...image.elfArgs(kernelFile),
      ]) +
      `# the same code as file ranges (--raw, libipt harness --map):\n${ranges.map((r) => `# --raw ${r}\n`).join("")}`;
    io.writeFile(argsFile, new TextEncoder().encode(text));
    lines.push(`decode with  ${command}`);
    lines.push(`             (ptxed: ptxed $(grep -v '^#' ${argsFile}) --pt ${args.output})`);
  }
  io.stdout(`${lines.join("\n")}\n`);
  return 0;
}

/** What to add when an output mode the CPU lacks was asked for (Broadwell: ToPA only). */
function outputHint(args: SimulateArgs, rule: GpRule): string {
  if (rule === GpRule.CtlSingleRange)
    return ` (${args.preset} has ToPA output only: use --topa SIZES, e.g. --topa 4K, or set ToPA in --ctl)`;
  if (rule === GpRule.CtlToPA)
    return ` (${args.preset} has no ToPA output: use --single-range BASE:SIZE, or clear ToPA in --ctl)`;
  return "";
}

/** A preset's first family/model as decoders take it (`--cpu 6/0x5e`). */
function presetCpu(name: SimulateArgs["preset"]): string {
  const [family, model] = PRESETS[name].models[0]!.split("_");
  return `${Number.parseInt(family!, 16)}/0x${model!.toLowerCase()}`;
}

interface Loaded {
  execution: Execution;
  /** The process image, for executions converted from lackey. */
  image?: ProcessImage;
  /** First touches of data pages, for executions converted from lackey. */
  dataTouches?: PageTouches;
}

/** The execution the arguments name, or an error message. */
function loadExecution(args: SimulateArgs, io: SessionIo): Loaded | string {
  if ("command" in args.input) {
    const dir = args.saveLog === undefined ? mkdtempSync(join(tmpdir(), "ptkit-simulate-")) : undefined;
    const log = args.saveLog === undefined ? join(dir!, "lackey.log") : resolve(io.cwd, args.saveLog);
    try {
      const running = new Progress(io, "", 0);
      running.status(`running ${args.input.command.join(" ")} under valgrind's lackey...`);
      const run = runUnderLackey(args.input.command, log, io.cwd);
      running.done();
      if (typeof run === "string") return run;
      // The program's output goes to stderr: stdout is the summary, for scripts.
      io.stderr(run.stdout + run.stderr);
      // No log: valgrind did not start the program (its own message is above).
      if (openError(io, log) !== undefined) return notStarted(args.input.command[0]!, io);
      return convertLog(log, args, io);
    } finally {
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    }
  }
  const file = args.input.file;
  const problem = openError(io, file, "cannot read");
  if (problem !== undefined) return problem;
  const size = io.fileSize(file);
  const head = io.readRange(file, 0, Math.min(size, HEAD_BYTES));
  const kind = fileKind(head);
  const format = args.format ?? (kind === undefined ? undefined : FORMAT_OF[kind]);
  if (format === undefined) return notAnExecution(file, kind);
  if (format === "lackey") return convertLog(file, args, io);
  const bytes = io.readFile(file);
  try {
    return { execution: format === "jsonl" ? readExecJsonl(bytes) : readExecBinary(bytes) };
  } catch (e) {
    if (!(e instanceof PtError)) throw e;
    return diagnosticLine(file, e);
  }
}

/** valgrind could not start `program`: say how to name it. */
function notStarted(program: string, io: SessionIo): string {
  const local = !program.includes("/") && openError(io, program) === undefined;
  return `valgrind could not run '${program}'${local ? `: a program in the current directory is run as ./${program}` : ""}`;
}

/** Why `file` is not an execution, from what it looks like, with the command that takes it. */
function notAnExecution(file: string, kind: FileKind | undefined): string {
  switch (kind) {
    case "elf":
      return `${file} is a program (ELF), not an execution: run it under valgrind with 'ptkit simulate -o trace.pt -- ${file.includes("/") ? file : `./${file}`}'`;
    case "trace":
      return `${file} is already an Intel PT trace: list its packets with 'ptkit dump ${file}'`;
    case "perf":
      return `${file} is a perf.data file: decode its Intel PT with 'ptkit perf ${file}'`;
  }
  return `${file}: not an execution (JSON Lines, binary) or a lackey log; use --format`;
}

/** The execution format of each kind of file that holds one. */
const FORMAT_OF: Partial<Record<FileKind, ExecFormat>> = {
  "exec-binary": "binary",
  "exec-jsonl": "jsonl",
  lackey: "lackey",
};

/** Convert a lackey log, reading it in chunks and mapping the objects it names. */
function convertLog(path: string, args: SimulateArgs, io: SessionIo): Loaded | string {
  const image = new ProcessImage((p) => io.readFile(p));
  const converter = new LackeyConverter({
    code: image.image,
    onObject: (p, bias) => image.map(p, bias),
    ...(args.cr3 === undefined ? {} : { cr3: args.cr3 }),
    dataPages: args.env?.dataFaults ?? false,
  });
  const size = io.fileSize(path);
  const progress = new Progress(io, "converting the lackey log", size);
  for (let at = 0; at < size; at += CHUNK) {
    progress.update(at);
    converter.push(io.readRange(path, at, Math.min(CHUNK, size - at)));
  }
  const r = converter.finish();
  progress.done();
  for (const problem of image.problems) io.stderr(`ptkit simulate: warning: cannot map ${problem}\n`);
  for (const i of r.issues) io.stderr(`ptkit simulate: ${path}:${i.line}: ${i.message}\n`);
  if (r.stats.issues > r.issues.length)
    io.stderr(`ptkit simulate: ... ${r.stats.issues - r.issues.length} more problems\n`);
  if (r.fatal !== undefined)
    return `${path}:${r.fatal.line} (byte ${r.fatal.offset}): conversion stopped: ${r.fatal.message}`;
  return {
    execution: r.execution,
    image,
    ...(r.dataTouches === undefined ? {} : { dataTouches: r.dataTouches }),
  };
}
