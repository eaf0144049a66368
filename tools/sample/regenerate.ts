/**
 * Regenerates the bundled sample (sample/, see its README.md): compiles sample.c
 * freestanding with gcc, runs it under valgrind's lackey through `ptkit simulate`
 * with timing packets, and writes sample.elf, sample.pt and sample.json (how they
 * were made, the decode parameters `ptkit demo` reads, and counts taken from the
 * execution itself that the demo's test checks the decoder against).
 *
 *   npx tsc -p tsconfig.json && node dist/tools/sample/regenerate.js [--check]
 *
 * With --check it compares with the committed files instead of writing them.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Symbolizer, SymbolTable } from "../../src/analysis/index.js";
import { Profile, type ProfileSummary } from "../../src/analysis/run-profile.js";
import { commandIo, main } from "../../src/cli/ptkit.js";
import { parseElf } from "../../src/image/index.js";
import { traceWordsWrites } from "../../src/node/trace-words.js";
import { valgrindVersion } from "../../src/node/valgrind.js";
import {
  CTL,
  ExecEvent,
  type Execution,
  getField,
  infoClass,
  Msr,
  MsrFile,
  msrName,
  presetCapabilities,
  readExecBinary,
  resolveOptions,
} from "../../src/unit/index.js";

/** The repository's sample/ (this file runs from dist*\/tools/sample/). */
export const SAMPLE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "sample");

/** Freestanding and small: no libc, no PIE, no stack protector, no unwind tables. */
export const CFLAGS: readonly string[] = [
  "-O1",
  "-fno-inline",
  "-ffreestanding",
  "-fno-builtin",
  "-nostdlib",
  "-static",
  "-fno-pie",
  "-no-pie",
  "-fno-stack-protector",
  "-fno-asynchronous-unwind-tables",
  "-fcf-protection=none",
  "-Wl,--build-id=none",
  "-Wl,-z,noseparate-code",
];

/** User-mode trace with TSC, MTC (every 2^3 crystal ticks) and cycle-accurate CYC packets. */
export const SIMULATE_OPTIONS: readonly string[] = ["--user", "--tsc", "--mtc", "3", "--cyc", "1"];

/** The generated files, by name in sample/. */
export type SampleFiles = Record<"sample.elf" | "sample.pt" | "sample.json", Uint8Array>;

function firstLine(command: string, args: string[]): string | undefined {
  const r = spawnSync(command, args, { encoding: "utf8" });
  return r.error || r.status !== 0 ? undefined : r.stdout.split("\n")[0]!.trim();
}

/** The gcc version line, or undefined when gcc cannot be run. */
export function gccVersion(): string | undefined {
  return firstLine("gcc", ["--version"]);
}

/** Build the sample from `source` (sample.c) in a temporary directory; throws with what failed. */
export async function generateSample(source: string): Promise<SampleFiles> {
  const compiler = gccVersion();
  const valgrind = valgrindVersion();
  if (compiler === undefined || valgrind === undefined) throw new Error("needs gcc and valgrind");
  const dir = mkdtempSync(join(tmpdir(), "ptkit-sample-"));
  try {
    const elfPath = join(dir, "sample.elf");
    const cc = spawnSync("gcc", [...CFLAGS, "-o", elfPath, source], { encoding: "utf8" });
    if (cc.status !== 0) throw new Error(`gcc failed: ${cc.stderr}`);
    const argv = [...SIMULATE_OPTIONS, "--save-exec", join(dir, "exec.bin"), "-o", join(dir, "sample.pt")];
    const out: string[] = [];
    const err: string[] = [];
    const io = {
      ...commandIo(),
      cwd: dir,
      stdout: (t: string) => out.push(t),
      stderr: (t: string) => err.push(t),
    };
    if ((await main(["simulate", ...argv, "--", "./sample.elf"], io)) !== 0)
      throw new Error(`ptkit simulate failed: ${err.join("")}`);
    const elf = new Uint8Array(readFileSync(elfPath));
    const json = describe(elf, readFileSync(join(dir, "exec.bin")), compiler, valgrind);
    return {
      "sample.elf": elf,
      "sample.pt": new Uint8Array(readFileSync(join(dir, "sample.pt"))),
      "sample.json": new TextEncoder().encode(`${JSON.stringify(json, null, 2)}\n`),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** sample.json: how the files were made, how to decode the trace, what ran in user mode. */
function describe(elf: Uint8Array, execBytes: Uint8Array, compiler: string, valgrind: string) {
  const unit = traceUnit();
  const exec = readExecBinary(execBytes);
  return {
    about: "ptkit's bundled sample, made by tools/sample/regenerate.ts; see README.md",
    source: "sample.c",
    program: "sample.elf",
    trace: "sample.pt",
    compiler,
    compile: `gcc ${CFLAGS.join(" ")} -o sample.elf sample.c`,
    valgrind,
    simulate: `ptkit simulate ${SIMULATE_OPTIONS.join(" ")} -o sample.pt -- ./sample.elf`,
    traceUnit: unit.description,
    decode: unit.decode,
    // All instructions, the stand-in kernel's included; userMode is what the trace shows.
    execution: { instructions: exec.insnCount, userMode: userModeProfile(elf, exec) },
  };
}

/** The trace unit as `ptkit simulate` programs it for SIMULATE_OPTIONS, with the generator's clocks. */
function traceUnit() {
  const parsed = traceWordsWrites(SIMULATE_OPTIONS);
  if (typeof parsed === "string") throw new Error(`bad SIMULATE_OPTIONS: ${parsed}`);
  const msrs = new MsrFile(presetCapabilities(parsed.preset));
  for (const w of parsed.writes) msrs.writeMsr(w.msr, w.value);
  const clocks = resolveOptions({ msrs });
  const values = [...new Set(parsed.writes.map((w) => w.msr))].map((m) => {
    const v = msrs.readMsr(m);
    return [msrName(m) ?? `0x${m.toString(16)}`, typeof v === "bigint" ? `0x${v.toString(16)}` : v];
  });
  const ctl = { hi: 0, lo: 0 };
  msrs.rdmsr(Msr.Ctl, ctl);
  return {
    description: {
      cpu: parsed.preset,
      msrs: Object.fromEntries(values),
      cpuid15Eax: clocks.ctcEax,
      cpuid15Ebx: clocks.ctcEbx,
      nominalRatio: clocks.nominalRatio,
      cbr: clocks.cbr,
      cyclesPerInsn: clocks.cyclesPerInsn,
      tsc: `0x${clocks.tsc.toString(16)}`,
    },
    decode: {
      mtcFreq: getField(ctl.hi, ctl.lo, CTL.MTCFreq),
      nomFreq: clocks.nominalRatio,
      cpuid15Eax: clocks.ctcEax,
      cpuid15Ebx: clocks.ctcEbx,
    },
  };
}

/** What the execution did at CPL 3: what a --user trace shows (the stand-in kernel left out). */
function userModeProfile(elf: Uint8Array, exec: Execution): ProfileSummary {
  const symbols = new Symbolizer();
  symbols.add(new SymbolTable(parseElf(elf), { name: "sample.elf" }));
  const profile = new Profile(symbols);
  let cpl = 3;
  let e = 0;
  for (let i = 0; i < exec.insnCount; i++) {
    for (; e < exec.eventCount && exec.evAt[e]! <= i; e++)
      if (exec.evKind[e] === ExecEvent.Cpl) cpl = exec.evA[e]!;
    if (cpl === 3) profile.add(exec.ipHi[i]!, exec.ipLo[i]!, infoClass(exec.info[i]!));
  }
  return profile.summary();
}

async function run(argv: string[]): Promise<number> {
  const check = argv.includes("--check");
  const files = await generateSample(join(SAMPLE_DIR, "sample.c"));
  let differ = 0;
  for (const [name, bytes] of Object.entries(files)) {
    const path = join(SAMPLE_DIR, name);
    if (!check) {
      writeFileSync(path, bytes);
      console.log(`wrote ${path} (${bytes.length} bytes)`);
      continue;
    }
    let old: Uint8Array | undefined;
    try {
      old = new Uint8Array(readFileSync(path));
    } catch {
      old = undefined;
    }
    const same = old !== undefined && Buffer.compare(old, bytes) === 0;
    if (!same) differ++;
    console.log(`${same ? "same   " : "DIFFERS"} ${path}`);
  }
  return differ === 0 ? 0 : 1;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  process.exitCode = await run(process.argv.slice(2));
