/**
 * Seeds per input format: the shared corpus (libipt's ptt tests with the argv of their
 * ptdump/ptxed checks, real captures, perf.data files, ELF binaries), the bundled
 * sample, and small executions and MSR write lists made here. Each seed is a file to
 * mutate plus how ptkit (or a library driver) reads it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { commandIo, runCli } from "../../src/cli/ptkit.js";
import { decodeInsn, ExecMode, InsnInfo } from "../../src/isa/index.js";
import { writeExecBinary } from "../../src/unit/exec/binary.js";
import { readExecJsonl } from "../../src/unit/exec/jsonl.js";
import { type Driver, INPUT, SCRATCH } from "./types.js";

export interface Seed {
  name: string;
  bytes: Uint8Array;
  inputName: string;
  cwd: string;
  argv?: string[];
  driver?: Driver;
  /** Argv whose raw trace argument may take a `:from-to` range (past-end check). */
  rangeable?: boolean;
  /** A perf.data file: bytes appended at its end must not change the output. */
  appendable?: boolean;
  /** perf.data in pipe mode: the real process may read it from stdin. */
  pipe?: boolean;
  /** For `cli` seeds: the format the seed comes from. */
  from?: Format;
}

export const FORMATS = [
  "raw",
  "event",
  "insn",
  "block",
  "elf",
  "perf",
  "perf-pipe",
  "pevent",
  "exec-jsonl",
  "exec-binary",
  "exec-lackey",
  "msr",
  "cli",
] as const;
export type Format = (typeof FORMATS)[number];

/** Seeds larger than this are not used (a case must stay quick). */
const MAX_SEED = 512 * 1024;

/** The options that decode the sample and the dynamorio capture's timing. */
const SAMPLE_TIMING = [
  "--mtc-freq",
  "3",
  "--nom-freq",
  "37",
  "--cpuid-0x15.eax",
  "2",
  "--cpuid-0x15.ebx",
  "308",
];

/** Raw traces are cut to this: a case must stay quick, and the start has the PSBs. */
const MAX_TRACE = 64 * 1024;

function read(path: string): Uint8Array | undefined {
  if (!existsSync(path) || !statSync(path).isFile() || statSync(path).size > MAX_SEED) return undefined;
  return new Uint8Array(readFileSync(path));
}

function readTrace(path: string): Uint8Array | undefined {
  return read(path)?.subarray(0, MAX_TRACE);
}

type Seeds = Record<Format, Seed[]>;

export async function loadSeeds(corpus: string, repo: string): Promise<Seeds> {
  const seeds: Seeds = Object.fromEntries(FORMATS.map((f) => [f, []])) as unknown as Seeds;
  const add = (format: Format, s: Seed | undefined): void => {
    if (s) seeds[format].push(s);
  };
  pttSeeds(join(corpus, "ptt"), add);
  await sampleSeeds(join(repo, "sample"), add);
  realSeeds(join(corpus, "real"), add);
  madeSeeds(add);
  // The event decoder reads every raw trace the packet decoder does.
  for (const s of seeds.raw)
    if (!seeds.event.some((e) => e.name === s.name))
      seeds.event.push({ name: s.name, bytes: s.bytes, inputName: s.inputName, cwd: s.cwd, driver: "event" });
  // The real process runs every command seed.
  for (const f of FORMATS)
    if (f !== "cli") for (const s of seeds[f]) if (s.argv) seeds.cli.push({ ...s, from: f });
  return seeds;
}

type Add = (format: Format, s: Seed | undefined) => void;

interface Manifest {
  variants: { dir: string; checks: { tool: string; argv: string[]; decoder?: string }[] }[];
}

/** libipt's conformance tests: each check's argv, with the trace, image or sideband as the input. */
function pttSeeds(root: string, add: Add): void {
  if (!existsSync(root)) return;
  for (const name of readdirSync(root).sort()) {
    const dir = join(root, name);
    if (!existsSync(join(dir, "manifest.json"))) continue;
    const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as Manifest;
    for (const variant of manifest.variants) {
      const cwd = join(dir, variant.dir);
      for (const check of variant.checks) {
        const command = check.tool === "ptdump" ? "dump" : "flow";
        const args = check.argv.slice(1);
        const format: Format = check.tool === "ptdump" ? "raw" : check.decoder === "block" ? "block" : "insn";
        // The trace: the last argument of ptdump, the one after --pt for ptxed.
        const at = command === "dump" ? args.length - 1 : args.indexOf("--pt") + 1;
        if (at > 0 || command === "dump")
          add(format, fileSeed(`${name}:${check.tool}`, cwd, [command, ...args], at + 1, true));
        // The image of flow checks, and each sideband file.
        for (let i = 0; i < args.length; i++) {
          if (args[i] === "--raw" && format === "insn")
            add(format, fileSeed(`${name}:image`, cwd, [command, ...args], i + 2, false));
          if (args[i] === "--pevent:primary" || args[i] === "--pevent:secondary")
            add("pevent", fileSeed(`${name}:${check.tool}:sideband`, cwd, [command, ...args], i + 2, false));
        }
      }
    }
  }
}

/** A seed from argument `i` of argv (a `file[:range]`): the file's bytes, the argument an input placeholder. */
function fileSeed(
  name: string,
  cwd: string,
  argv: string[],
  i: number,
  rangeable: boolean,
): Seed | undefined {
  const arg = argv[i];
  if (arg === undefined) return undefined;
  const colon = arg.indexOf(":");
  const file = colon < 0 ? arg : arg.slice(0, colon);
  const bytes = read(join(cwd, file));
  if (!bytes) return undefined;
  const out = argv.slice();
  out[i] = INPUT + (colon < 0 ? "" : arg.slice(colon));
  return {
    name,
    bytes,
    inputName: file.replace(/.*\//, ""),
    cwd,
    argv: out,
    rangeable: rangeable && colon < 0,
  };
}

async function sampleSeeds(dir: string, add: Add): Promise<void> {
  const pt = read(join(dir, "sample.pt"));
  const elf = read(join(dir, "sample.elf"));
  if (pt) {
    const s = { name: "sample.pt", bytes: pt, inputName: "sample.pt", cwd: dir, rangeable: true };
    add("raw", { ...s, argv: ["dump", INPUT] });
    add("raw", { ...s, argv: ["stats", INPUT], rangeable: false }); // it prints its speed
    for (const decoder of ["insn", "block"] as const)
      add(decoder, {
        ...s,
        argv: [
          "flow",
          `--${decoder}-decoder`,
          "--time",
          ...SAMPLE_TIMING,
          "--elf",
          "sample.elf",
          "--pt",
          INPUT,
        ],
      });
  }
  if (elf && pt) {
    const log = await lackeyLog(dir, elf);
    const s = { name: "sample lackey log", bytes: log, inputName: "lackey.log", cwd: dir };
    add("exec-lackey", { ...s, argv: ["simulate", "-o", `${SCRATCH}/out.pt`, INPUT] });
    add("exec-lackey", {
      ...s,
      argv: ["simulate", "--format", "lackey", "--tsc", "-o", `${SCRATCH}/out.pt`, INPUT],
    });
  }
  if (elf && pt) {
    const s = { name: "sample.elf", bytes: elf, inputName: "sample.elf", cwd: dir };
    add("elf", { ...s, driver: "elf" });
    add("elf", { ...s, argv: ["symbols", INPUT, "0x401000", "0x401100"] });
    add("elf", { ...s, argv: ["flow", "--elf", INPUT, "--pt", "sample.pt:0x0-0x1000"] });
  }
}

function realSeeds(root: string, add: Add): void {
  // Raw traces: packet level.
  const raws = [
    "keeper-intelpt-summary/traced_data.bin",
    "keeper-intelpt-summary/loop-tnt.pt",
    "dynamorio-drpt2trace/test_simple.tracedir-2aad718/pt.bin",
    ...listFiles(join(root, "hase/reference"), /-aux-idx\d+\.bin$/).map((f) => `hase/reference/${f}`),
    ...listFiles(join(root, "quipper-perf-data/extracted"), /-aux-idx\d+\.bin$/).map(
      (f) => `quipper-perf-data/extracted/${f}`,
    ),
  ];
  for (const rel of raws) {
    const bytes = readTrace(join(root, rel));
    if (!bytes) continue;
    const s = { name: rel, bytes, inputName: "trace.pt", cwd: root, rangeable: true };
    add("raw", { ...s, argv: ["dump", INPUT] });
    add("raw", { ...s, argv: ["stats", INPUT], rangeable: false }); // it prints its speed
  }
  // dynamorio: a raw trace with its program and libipt pevent sideband.
  const dr = join(root, "dynamorio-drpt2trace/test_simple.raw");
  const pevent = [
    "--pevent:sample-type",
    "0x10086",
    "--pevent:time-shift",
    "31",
    "--pevent:time-mult",
    "581029125",
    "--pevent:time-zero",
    "18444502336406842448",
  ];
  const flow = ["flow", "--cpu", "6/85/4", ...SAMPLE_TIMING, "--elf", "hello"];
  const pt = readTrace(join(dr, "pt.bin"));
  if (pt) {
    const s = { name: "dynamorio pt.bin", bytes: pt, inputName: "pt.bin", cwd: dr, rangeable: true };
    add("raw", { ...s, argv: ["dump", INPUT] });
    add("insn", { ...s, argv: [...flow, "--insn-decoder", "--pt", INPUT] });
    add("block", { ...s, argv: [...flow, "--block-decoder", "--pt", INPUT] });
  }
  for (const sb of ["primary.sideband.pevent", "secondary.sideband.pevent"]) {
    const bytes = read(join(dr, sb));
    if (!bytes) continue;
    const s = { name: `dynamorio ${sb}`, bytes, inputName: sb, cwd: dr };
    add("pevent", { ...s, argv: [...flow, ...pevent, "--pevent:primary", INPUT, "--pt", "pt.bin"] });
    add("pevent", { ...s, argv: ["dump", "--sb:compact", ...pevent, "--pevent:primary", INPUT, "pt.bin"] });
  }
  const hello = read(join(dr, "hello"));
  if (hello) {
    const s = { name: "dynamorio hello", bytes: hello, inputName: "hello", cwd: dr };
    add("elf", { ...s, driver: "elf" });
    add("elf", { ...s, argv: ["symbols", INPUT, "0x401000"] });
    add("elf", {
      ...s,
      argv: ["flow", "--cpu", "6/85/4", ...SAMPLE_TIMING, "--elf", INPUT, "--pt", "pt.bin"],
    });
  }
  // perf.data: HASE (with their binaries) and quipper (file and pipe mode).
  const hase = join(root, "hase/2018-05");
  for (const run of listFiles(hase, /T\d+$/)) {
    const dir = join(hase, run);
    const bytes = read(join(dir, "perf.data.1"));
    if (!bytes) continue;
    const s = { name: `hase ${run}`, bytes, inputName: "perf.data", cwd: dir, appendable: true };
    add("perf", { ...s, argv: ["perf", "--symfs", "binaries", INPUT] });
    add("perf", { ...s, argv: ["perf", "-q", "--branches", "--symfs", "binaries", INPUT] });
    // The analyses' walk, which goes on past the libraries not copied along (perf's resync).
    add("perf", {
      ...s,
      argv: ["perf", "-q", "--timeline", `${SCRATCH}/t.json`, "--symfs", "binaries", INPUT],
    });
    add("perf", { ...s, argv: ["latency", "--top", "3", "--symfs", "binaries", INPUT] });
    add("perf", { ...s, argv: ["perf-dump", INPUT] });
    for (const elf of listFilesDeep(join(dir, "binaries")))
      add("elf", { name: `hase ${elf}`, bytes: read(elf)!, inputName: "prog", cwd: dir, driver: "elf" });
  }
  for (const old of ["loopy/loopy-20180404T162955.perf", "control_flow/control_flow-20180404T163033.perf"]) {
    const bytes = read(join(root, "hase/2018-04-04", old));
    if (bytes)
      add("perf", {
        name: old,
        bytes,
        inputName: "perf.data",
        cwd: join(root, "hase/2018-04-04"),
        argv: ["perf", INPUT],
        appendable: true,
      });
  }
  const quipper = join(root, "quipper-perf-data");
  const file = read(join(quipper, "perf.data.intel_pt-4.14"));
  if (file) {
    const s = {
      name: "quipper perf.data",
      bytes: file,
      inputName: "perf.data",
      cwd: quipper,
      appendable: true,
    };
    add("perf", { ...s, argv: ["perf", INPUT] });
    add("perf", { ...s, argv: ["perf-dump", INPUT] });
  }
  const piped = read(join(quipper, "perf.data.piped.intel_pt-4.14"));
  if (piped) {
    const s = {
      name: "quipper piped perf.data",
      bytes: piped,
      inputName: "perf.data",
      cwd: quipper,
      pipe: true,
    };
    add("perf-pipe", { ...s, argv: ["perf", INPUT] });
    add("perf-pipe", { ...s, argv: ["perf", "--jsonl", INPUT] });
    add("perf-pipe", { ...s, argv: ["perf-dump", INPUT] });
    // Its second record made a HEADER_TRACING_DATA of 3 GiB: the reader once skipped
    // that far backwards (its padding rounded with `& ~7`) and read before the file.
    const tracing = piped.slice();
    const view = new DataView(tracing.buffer, tracing.byteOffset, tracing.byteLength);
    const second = 16 + view.getUint16(16 + 6, true);
    if (second + 12 <= tracing.length) {
      view.setUint32(second, 66, true);
      view.setUint32(second + 8, 0xc0000000, true);
      add("perf-pipe", {
        ...s,
        name: "quipper piped perf.data, 3 GiB of tracing data",
        bytes: tracing,
        argv: ["perf", INPUT],
      });
    }
  }
}

/**
 * A lackey log of the sample's first instructions, as valgrind writes it: the object
 * with its load bias, then one line per instruction. The instructions are those the
 * sample's trace shows (decoded with ptkit flow), their sizes from the ISA decoder.
 */
async function lackeyLog(dir: string, elf: Uint8Array): Promise<Uint8Array> {
  const out: string[] = [];
  const io = { ...commandIo(), stdout: (t: string) => out.push(t), stderr: () => {}, stderrIsTty: false };
  await runCli(["flow", "--elf", join(dir, "sample.elf"), "--pt", `${join(dir, "sample.pt")}:0x0-0x400`], io);
  const lines = [
    `--1-- Reading syms from ${join(dir, "sample.elf")}`,
    "--1--    svma 0x00004000e8, avma 0x00004000e8",
  ];
  const insn = new InsnInfo();
  for (const m of out.join("").matchAll(/^([0-9a-f]{16})\b/gm)) {
    const ip = Number.parseInt(m[1]!, 16);
    // The sample is linked at 0x400000 from file offset 0.
    const size = decodeInsn(elf, ip - 0x400000, 0, ip, ExecMode.Bits64, insn);
    if (size <= 0 || lines.length > 400) break;
    lines.push(`I  ${ip.toString(16).padStart(8, "0")},${size}`);
  }
  return new TextEncoder().encode(`${lines.join("\n")}\n`);
}

/** A small execution touching every kind of record (see src/unit/exec/jsonl.ts). */
export const EXEC_JSONL = [
  '{"k":"cpl","cpl":3}',
  '{"k":"cr3","cr3":"0x1000"}',
  '{"k":"insn","ip":"0x401000","size":2,"class":"cond-branch"}',
  '{"k":"insn","ip":"0x401010","size":5,"class":"call"}',
  '{"k":"cycles","n":"0x20"}',
  '{"k":"insn","ip":"0x402000","size":1,"class":"return"}',
  '{"k":"interrupt","vector":32,"from":"0x401015","to":"0xffffffff81000000"}',
  '{"k":"cpl","cpl":0}',
  '{"k":"insn","ip":"0xffffffff81000000","size":5,"class":"ptwrite"}',
  '{"k":"ptw","value":"0x1234","bytes":4}',
  '{"k":"ticks","n":"0x3e8"}',
  '{"k":"cbr","ratio":24}',
  '{"k":"insn","ip":"0xffffffff81000005","size":3,"class":"mwait"}',
  '{"k":"mwait","hints":32,"ext":1}',
  '{"k":"sleep","cstate":6,"substate":2,"hw":true}',
  '{"k":"wake","last":6,"deepest":6,"reasons":["interrupt"]}',
  '{"k":"wrmsr","msr":1392,"value":"0x2001"}',
  '{"k":"insn","ip":"0xffffffff81000008","size":2,"class":"iret"}',
  '{"k":"end","ip":"0x401015"}',
  "",
].join("\n");

/** Simulate options that switch on the unit's packet kinds and output modes. */
const SIMULATE_OPTIONS: string[][] = [
  [],
  ["--tsc", "--mtc", "3", "--cyc", "1"],
  ["--user", "--no-retc", "--psb-freq", "0"],
  ["--ptw", "--fup-on-ptw", "--pwr-evt", "--cpu", "icelake"],
  ["--topa", "4K,4K+stop"],
  ["--single-range", "0x100000:128"],
];

function madeSeeds(add: Add): void {
  const jsonl = new TextEncoder().encode(EXEC_JSONL);
  const binary = writeExecBinary(readExecJsonl(jsonl));
  for (const [format, bytes, name] of [
    ["exec-jsonl", jsonl, "run.jsonl"],
    ["exec-binary", binary, "run.bin"],
  ] as const) {
    const s = { name, bytes, inputName: name, cwd: "/" };
    add(format, { ...s, driver: format });
    for (const opts of SIMULATE_OPTIONS)
      add(format, { ...s, argv: ["simulate", ...opts, "-o", `${SCRATCH}/out.pt`, INPUT] });
  }
  for (const [name, writes] of MSR_SEEDS)
    add("msr", { name, bytes: msrBytes(writes), inputName: "msr.bin", cwd: "/", driver: "msr" });
}

/** A list of WRMSRs as the msr driver reads it: preset byte, then 9 bytes each (MSR index, value LE). */
export function msrBytes(writes: readonly [number, bigint][]): Uint8Array {
  const out = new Uint8Array(1 + 9 * writes.length);
  writes.forEach(([msr, value], i) => {
    out[1 + 9 * i] = msr;
    for (let b = 0; b < 8; b++) out[2 + 9 * i + b] = Number((value >> BigInt(8 * b)) & 0xffn);
  });
  return out;
}

/** Index into ALL_MSRS: 0 OutputBase, 1 MaskPtrs, 2 Ctl, 3 Status, 4 Cr3Match, 5.. ADDRn_A/B. */
const MSR_SEEDS: [string, [number, bigint][]][] = [
  ["ctl trace user+os", [[2, 0x2e0dn]]],
  ["sample's ctl", [[2, 0x8e60bn]]],
  [
    "cr3 filter",
    [
      [4, 0x3d4e5000n],
      [2, 0x2e8dn],
    ],
  ],
  [
    "address filter",
    [
      [5, 0x401000n],
      [6, 0x401fffn],
      [2, 0x1_0000_2e0dn],
    ],
  ],
  [
    "topa output",
    [
      [0, 0x100000n],
      [1, 0x7fn],
      [2, 0x2f0dn],
    ],
  ],
  [
    "status then ctl",
    [
      [3, 0x20n],
      [2, 0x2e0dn],
    ],
  ],
];

function listFiles(dir: string, pattern: RegExp): string[] {
  return existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => pattern.test(f))
        .sort()
    : [];
}

function listFilesDeep(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...listFilesDeep(p));
    else if (e.isFile() && statSync(p).size <= MAX_SEED) out.push(p);
  }
  return out.sort();
}
