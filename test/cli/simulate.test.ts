/**
 * `ptkit simulate`: executions in (JSON Lines, binary, lackey logs, a program run under
 * valgrind), traces out that `ptkit flow` decodes back, configuration through MSR
 * values and named options with #GP errors naming the field.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { Symbolizer, SymbolTable } from "../../src/analysis/index.js";
import { BUNDLED_SAMPLE } from "../../src/cli/demo/sample.js";
import { main } from "../../src/cli/ptkit.js";
import { kernelElf } from "../../src/cli/simulate/kernel.js";
import { parseSimulateArgs } from "../../src/cli/simulate/options.js";
import { Image, parseElf } from "../../src/image/index.js";
import { InsnClass } from "../../src/isa/index.js";
import { valgrindVersion } from "../../src/node/valgrind.js";
import { collectStats, PacketType } from "../../src/packet/index.js";
import { writeExecJsonl } from "../../src/unit/exec/jsonl.js";
import { KERNEL_CODE } from "../../src/unit/exec/lackey-kernel.js";
import { ExecBuilder } from "../../src/unit/exec/types.js";
import { Msr, PRESET_NAMES, PRESETS, type PresetName } from "../../src/unit/index.js";
import { captureIo } from "../conformance/ptt.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-simulate-"));

/** Code at 0x401000: a loop of five rounds, a call, a return, a system call. */
const CODE = Uint8Array.from([
  0x31,
  0xc0, //                   401000 xor eax, eax
  0xff,
  0xc0, //                   401002 inc eax
  0x83,
  0xf8,
  0x05, //             401004 cmp eax, 5
  0x75,
  0xf9, //                   401007 jne 401002
  0xe8,
  0x02,
  0x00,
  0x00,
  0x00, // 401009 call 401010
  0x0f,
  0x05, //                   40100e syscall
  0xc3, //                         401010 ret
]);
const insn = (ip: number, size: number, cls: string) =>
  JSON.stringify({ k: "insn", ip: `0x${ip.toString(16)}`, size, class: cls });
const IPS = [
  0x401000,
  ...[1, 2, 3, 4, 5].flatMap(() => [0x401002, 0x401004, 0x401007]),
  0x401009,
  0x401010,
  0x40100e,
];
const JSONL = [
  JSON.stringify({ k: "cpl", cpl: 3 }),
  insn(0x401000, 2, "other"),
  ...[1, 2, 3, 4, 5].flatMap(() => [
    insn(0x401002, 2, "other"),
    insn(0x401004, 3, "other"),
    insn(0x401007, 2, "cond-branch"),
  ]),
  insn(0x401009, 5, "call"),
  insn(0x401010, 1, "return"),
  insn(0x40100e, 2, "syscall"),
  JSON.stringify({ k: "cpl", cpl: 0 }),
  JSON.stringify({ k: "end", ip: "0xffffffff81000000" }),
].join("\n");

writeFileSync(join(dir, "code.bin"), CODE);
writeFileSync(join(dir, "run.jsonl"), `${JSONL}\n`);

function hasCompiler(): boolean {
  return spawnSync("gcc", ["--version"]).status === 0;
}

async function ptkit(...argv: string[]) {
  const io = captureIo(dir);
  const code = await main(argv, io);
  return { code, stdout: io.out.join(""), stderr: io.err.join("") };
}

/** The instruction IPs `ptkit flow` decodes from a trace, over the given --raw images. */
/**
 * The instructions `ptkit flow` decodes from `trace` made for the default preset
 * (Skylake): with its errata, as a real Skylake trace (the profile writes BDM70's PSB+).
 */
async function flowIps(trace: string, ...raw: string[]): Promise<number[]> {
  return flowIpsOn("skylake", trace, ...raw);
}

/** {@link flowIps} for a trace made with `--cpu preset`: `ptkit flow --cpu` its family/model. */
async function flowIpsOn(preset: PresetName, trace: string, ...raw: string[]): Promise<number[]> {
  const [family, model] = PRESETS[preset].models[0]!.split("_").map((x) => Number.parseInt(x, 16));
  const cpu = `${family}/${model}`;
  const r = await ptkit("flow", "--cpu", cpu, ...raw.flatMap((m) => ["--raw", m]), "--pt", trace);
  assert.equal(r.code, 0, r.stderr);
  return [...r.stdout.matchAll(/^([0-9a-f]{16}) /gm)].map((m) => Number.parseInt(m[1]!, 16));
}

describe("ptkit simulate", () => {
  test("--help explains the options with examples", async () => {
    const r = await ptkit("simulate", "--help");
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^usage: ptkit simulate/);
    assert.match(r.stdout, /--cr3-filter VALUE/);
    assert.match(r.stdout, /examples:\n {2}ptkit simulate -o ls\.pt -- \/bin\/ls/);
  });

  test("a JSON Lines execution becomes a trace that decodes back to it", async () => {
    const r = await ptkit("simulate", "-o", "a.pt", "run.jsonl");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^instructions 19\n/);
    assert.deepEqual(await flowIps("a.pt", "code.bin:0x401000"), IPS);
  });

  test("every --cpu preset's default configuration traces without #GP", async () => {
    for (const cpu of PRESET_NAMES) {
      const r = await ptkit("simulate", "--cpu", cpu, "-o", `default-${cpu}.pt`, "run.jsonl");
      assert.equal(r.code, 0, `${cpu}: ${r.stderr}`);
      assert.deepEqual(await flowIpsOn(cpu, `default-${cpu}.pt`, "code.bin:0x401000"), IPS, cpu);
    }
    // Broadwell has ToPA output only (CPUID.14H.0:ECX = 1): the default sets ToPA,
    // and asking for single-range output there is still the processor's #GP.
    const ctl = (cpu: string, ...more: string[]) => {
      const args = parseSimulateArgs(["--cpu", cpu, ...more, "-o", "x.pt", "run.jsonl"]);
      assert.ok("writes" in args);
      return args.writes.at(-1)!.value;
    };
    assert.equal(ctl("broadwell"), 0x210dn); // TraceEn, OS, User, ToPA, BranchEn
    assert.equal(ctl("skylake"), 0x200dn);
    const single = await ptkit(
      "simulate",
      "--cpu",
      "broadwell",
      "--single-range",
      "0:4K",
      "-o",
      "x.pt",
      "run.jsonl",
    );
    assert.equal(single.code, 1);
    assert.match(single.stderr, /#GP on broadwell: ToPA: TraceEn=1 with ToPA=0 .*ECX\[2\] = 0/);
  });

  test("named options shape the trace: user only, no RET compression, timing", async () => {
    const stats = async (...options: string[]) => {
      const r = await ptkit("simulate", ...options, "-o", "b.pt", "run.jsonl");
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(await flowIps("b.pt", "code.bin:0x401000"), IPS);
      return collectStats(new Uint8Array(readFileSync(join(dir, "b.pt"))));
    };
    const user = await stats("--user");
    assert.ok(user.counts[PacketType.TipPgd]! > 0, "the SYSCALL leaves user code");
    assert.equal(user.counts[PacketType.Tsc], 0);
    const noRetc = await stats("--user", "--no-retc");
    assert.equal(noRetc.counts[PacketType.Tip]!, user.counts[PacketType.Tip]! + 1, "the RET is a TIP now");
    assert.ok((await stats("--user", "--tsc")).counts[PacketType.Tsc]! > 0);
  });

  test("--save-exec writes a binary execution that gives the same trace", async () => {
    assert.equal((await ptkit("simulate", "--save-exec", "run.bin", "-o", "c.pt", "run.jsonl")).code, 0);
    const r = await ptkit("simulate", "-o", "d.pt", "run.bin");
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(readFileSync(join(dir, "d.pt")), readFileSync(join(dir, "c.pt")));
    assert.equal((await ptkit("simulate", "--save-exec", "again.jsonl", "-o", "e.pt", "run.bin")).code, 0);
    assert.equal(
      readFileSync(join(dir, "again.jsonl"), "utf8").trim().split("\n").length,
      JSONL.split("\n").length,
    );
  });

  test("MSR values and named options: IP filtering through --ctl and --addr0-a/b", async () => {
    // TraceEn, BranchEn, OS, User and ADDR0_CFG = 1 over the loop only.
    const r = await ptkit(
      "simulate",
      "--ctl",
      "0x10000200d",
      "--addr0-a",
      "0x401002",
      "--addr0-b",
      "0x401008",
      "-o",
      "f.pt",
      "run.jsonl",
    );
    assert.equal(r.code, 0, r.stderr);
    // FilterEn is decided where branches land: the first round is reached by falling
    // through from outside, the CALL at 0x401009 by falling through from inside.
    const loop = [0x401002, 0x401004, 0x401007];
    assert.deepEqual(await flowIps("f.pt", "code.bin:0x401000"), [
      ...loop,
      ...loop,
      ...loop,
      ...loop,
      0x401009,
    ]);
  });

  test("a write the processor rejects is a #GP naming the field", async () => {
    const mtc = await ptkit("simulate", "--cpu", "broadwell", "--mtc", "3", "-o", "x.pt", "run.jsonl");
    assert.equal(mtc.code, 1);
    assert.match(mtc.stderr, /WRMSR IA32_RTIT_CTL = 0x[0-9a-f]+ \(--mtc\): #GP on broadwell: MTCEn: /);
    const reserved = await ptkit("simulate", "--ctl", "0x4000000000200d", "-o", "x.pt", "run.jsonl");
    assert.match(reserved.stderr, /#GP on skylake: Reserved: bit 54 reserved/);
    const ranges = await ptkit(
      "simulate",
      ...["1-2", "3-4", "5-6"].flatMap((r) => ["--filter", r]),
      "-o",
      "x.pt",
      "run.jsonl",
    );
    assert.equal(ranges.code, 1);
    assert.match(ranges.stderr, /IA32_RTIT_ADDR2_A .*#GP on skylake/);
  });

  test("--event-trace sets EventEn, a one-line #GP on every preset (none has CPUID.14H.0:EBX[7])", async () => {
    const parsed = parseSimulateArgs(["--event-trace", "-o", "x.pt", "run.jsonl"]);
    assert.ok("writes" in parsed);
    const ctl = parsed.writes.at(-1)!;
    assert.equal(ctl.msr, Msr.Ctl);
    assert.equal((ctl.value >> 31n) & 1n, 1n);
    assert.equal(ctl.option, "--event-trace");
    for (const cpu of PRESET_NAMES) {
      const r = await ptkit("simulate", "--cpu", cpu, "--event-trace", "-o", "x.pt", "run.jsonl");
      assert.equal(r.code, 1);
      assert.match(
        r.stderr,
        new RegExp(
          `^ptkit simulate: WRMSR IA32_RTIT_CTL = 0x[0-9a-f]+ \\(--event-trace\\): #GP on ${cpu}: EventEn: [^\\n]+\\n$`,
        ),
      );
    }
  });

  test("bad arguments are reported", async () => {
    const cases: [string[], RegExp][] = [
      [["run.jsonl"], /-o\/--output <trace file> is required/],
      [["-o", "x.pt"], /expected one execution file/],
      [["-o", "x.pt", "--psb-freq", "16", "run.jsonl"], /--psb-freq: '16' is not a number 0\.\.15/],
      [["-o", "x.pt", "--filter", "5", "run.jsonl"], /--filter: '5' is not <from>-<to>/],
      [["-o", "x.pt", "--cpu", "z80", "run.jsonl"], /--cpu: 'z80' is not one of broadwell/],
      [["-o", "x.pt", "--format", "xml", "run.jsonl"], /--format: 'xml' is not jsonl, binary or lackey/],
      [["-o", "x.pt", "code.bin"], /code\.bin: not an execution/],
      [["-o", "x.pt", "missing.jsonl"], /cannot read missing\.jsonl/],
      [["-o", "x.pt", "--save-log", "l", "run.jsonl"], /--save-log needs '-- <command>'/],
      [["-o", "x.pt", "run.jsonl", "--"], /expected a command after '--'/],
    ];
    for (const [args, message] of cases) {
      const r = await ptkit("simulate", ...args);
      assert.equal(r.code, 1, args.join(" "));
      assert.match(r.stderr, message, args.join(" "));
    }
    // A corrupt execution: one line naming the file, the record and its offset.
    writeFileSync(join(dir, "bad.jsonl"), '{"k":"insn","ip":"0x1","size":99}\n');
    const bad = await ptkit("simulate", "-o", "x.pt", "bad.jsonl");
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^ptkit simulate: bad\.jsonl: execution line 1: .* at offset 0x0\n$/);
    writeFileSync(join(dir, "bad.bin"), Buffer.concat([Buffer.from("PTKEXEC\x01"), Buffer.from("garbage")]));
    const binary = await ptkit("simulate", "-o", "x.pt", "bad.bin");
    assert.equal(binary.code, 1);
    assert.match(binary.stderr, /^ptkit simulate: bad\.bin: execution: .* at offset 0x[0-9a-f]+\n$/);
  });

  test("errors say what to do next", async () => {
    const none = await ptkit("simulate");
    assert.equal(none.code, 1);
    assert.match(
      none.stderr,
      /expected one execution file, or '-- <command>'\.\nusage: ptkit simulate .*\n {7}ptkit simulate .*-- <command>/,
    );
    assert.match(
      (await ptkit("simulate", "-o", "x.pt", "missing.jsonl")).stderr,
      new RegExp(
        `cannot read missing\\.jsonl: no such file \\(looked for ${join(dir, "missing.jsonl")}; the current directory is ${dir}\\)`,
      ),
    );
    const elf = join(BUNDLED_SAMPLE, "sample.elf");
    const program = await ptkit("simulate", "-o", "x.pt", elf);
    assert.equal(program.code, 1);
    assert.equal(
      program.stderr,
      `ptkit simulate: ${elf} is a program (ELF), not an execution: run it under valgrind with 'ptkit simulate -o trace.pt -- ${elf}'\n`,
    );
    const trace = await ptkit("simulate", "-o", "x.pt", join(BUNDLED_SAMPLE, "sample.pt"));
    assert.match(
      trace.stderr,
      /sample\.pt is already an Intel PT trace: list its packets with 'ptkit dump .*sample\.pt'/,
    );
  });

  test("a program valgrind cannot start: how to name it", {
    skip: valgrindVersion() === undefined && "valgrind is not installed",
  }, async () => {
    const r = await ptkit("simulate", "-o", "x.pt", "--", "code.bin");
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /ptkit simulate: valgrind could not run 'code\.bin': a program in the current directory is run as \.\/code\.bin\n$/,
    );
    // A path in the test's own directory: certainly not there.
    const missing = join(dir, "no-such-program");
    const nowhere = await ptkit("simulate", "-o", "x.pt", "--", missing);
    assert.ok(nowhere.stderr.endsWith(`valgrind could not run '${missing}'\n`), nowhere.stderr);
  });

  test("progress on a terminal only: the valgrind run, then the log's conversion", {
    skip: valgrindVersion() === undefined && "valgrind is not installed",
  }, async () => {
    const io = { ...captureIo(dir), stderrIsTty: true };
    assert.equal(await main(["simulate", "-o", "true.pt", "--", "/bin/true"], io), 0);
    const err = io.err.join("").replaceAll("\x1b[K", "<clear>");
    assert.match(err, /^\r<clear>running \/bin\/true under valgrind's lackey\.\.\.\r<clear>/);
    assert.match(err, /\rconverting the lackey log \[#* *\] \d+%\r<clear>/);
    assert.equal((await ptkit("simulate", "-o", "true.pt", "--", "/bin/true")).stderr, "");
  });

  test("says so when valgrind is missing", async () => {
    const path = process.env.PATH;
    process.env.PATH = join(dir, "nowhere");
    try {
      const r = await ptkit("simulate", "-o", "x.pt", "--", "/bin/true");
      assert.equal(r.code, 1);
      assert.match(r.stderr, /valgrind is not installed or does not run \(apt-get install valgrind\)/);
    } finally {
      process.env.PATH = path;
    }
  });

  test("the WRMSRs come in programming order, CTL last", () => {
    const args = parseSimulateArgs([
      "--cr3-filter",
      "0x1000",
      "--stop",
      "1-2",
      "--status",
      "0",
      "-o",
      "x",
      "in",
    ]);
    assert.ok("writes" in args);
    assert.deepEqual(
      args.writes.map((w) => w.msr),
      [Msr.Status, Msr.Cr3Match, Msr.Addr0A, Msr.Addr0B, Msr.Ctl],
    );
    assert.equal(args.writes.at(-1)!.option, "--cr3-filter --stop");
  });
});

/**
 * 6000 indirect jumps between 4096 "jmp rax" slots at 0x500000 (a TIP each, about 18K of
 * trace), for output that wraps and stops.
 */
const JUMPS = (() => {
  const b = new ExecBuilder().cpl(3);
  const ips: number[] = [];
  let slot = 1;
  for (let i = 0; i < 6000; i++) {
    slot = (Math.imul(slot, 1103515245) + 12345) >>> 0;
    ips.push(0x500000 + 2 * ((slot >>> 8) & 4095));
    b.insn(0, ips.at(-1)!, 2, InsnClass.JumpIndirect);
  }
  writeFileSync(join(dir, "jumps.jsonl"), writeExecJsonl(b.build()));
  writeFileSync(
    join(dir, "slots.bin"),
    new Uint8Array(8192).fill(0xff).map((v, i) => (i & 1 ? 0xe0 : v)),
  );
  return ips;
})();

/** Whether `part` occurs in `whole` at `at`. */
const occursAt = (whole: number[], part: number[], at: number) => part.every((v, i) => whole[at + i] === v);

test("the stand-in kernel's ELF file: its code at the kernel base, its two entry points named", () => {
  const elf = parseElf(kernelElf());
  const symbols = new Symbolizer();
  symbols.add(new SymbolTable(elf, { name: "kernel" }));
  assert.equal(symbols.format(0xffffffff, 0x81000000), "kernel_syscall");
  assert.equal(symbols.format(0xffffffff, 0x81000010), "kernel_trap");
  const image = new Image("k");
  assert.equal(image.addElf(elf, { name: "kernel", zeroFill: false }), 1);
  const bytes = new Uint8Array(KERNEL_CODE.length);
  assert.equal(image.read(0xffffffff, 0x81000000, bytes, bytes.length), KERNEL_CODE.length);
  assert.deepEqual(bytes, KERNEL_CODE);
});

describe("ptkit simulate, output to memory", () => {
  test("a ToPA ring that wraps gives back the newest trace, from its first whole PSB", async () => {
    const r = await ptkit("simulate", "--topa", "4K,4K", "-o", "ring.pt", "jumps.jsonl");
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^memory {7}topa: wrapped, from the first whole PSB \(\d+ older bytes skipped\)$/m,
    );
    const size = readFileSync(join(dir, "ring.pt")).length;
    assert.ok(size > 4096 && size <= 8192, `${size} bytes`);
    const ips = await flowIps("ring.pt", "slots.bin:0x500000");
    assert.ok(ips.length > 500);
    assert.ok(
      occursAt(JUMPS, ips, JUMPS.length - ips.length),
      "the decoded jumps are the last ones executed",
    );
  });

  test("a STOP region ends the trace where it fills; the memory image says so", async () => {
    const r = await ptkit(
      "simulate",
      "--topa",
      "4K,4K+stop",
      "--memory",
      "stop",
      "-o",
      "stop.pt",
      "jumps.jsonl",
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /no wrap; stopped at the end of the region at 0x102000/);
    assert.equal(readFileSync(join(dir, "stop.pt")).length, 8192);
    const ips = await flowIps("stop.pt", "slots.bin:0x500000");
    assert.ok(ips.length > 1000 && ips.length < JUMPS.length);
    assert.ok(occursAt(JUMPS, ips, 0), "the decoded jumps are the first ones executed");
    const image = JSON.parse(readFileSync(join(dir, "stop.json"), "utf8"));
    assert.equal(BigInt(image.final.status) & 0x20n, 0x20n, "IA32_RTIT_STATUS.Stopped");
    assert.deepEqual(
      image.regions.map((g: { base: string; size: number }) => [g.base, g.size]),
      [
        ["0x101000", 4096],
        ["0x102000", 4096],
      ],
    );
    const regions = image.regions.map((g: { file: string }) => readFileSync(join(dir, g.file)));
    assert.deepEqual(Buffer.concat(regions), readFileSync(join(dir, "stop.pt")));
    assert.equal(readFileSync(join(dir, image.table.file)).length, 24);
  });

  test("a single range wraps too", async () => {
    const r = await ptkit("simulate", "--single-range", "0x200000:4K", "-o", "single.pt", "jumps.jsonl");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /single-range: wrapped/);
    const ips = await flowIps("single.pt", "slots.bin:0x500000");
    assert.ok(ips.length > 100);
    assert.ok(occursAt(JUMPS, ips, JUMPS.length - ips.length));
  });

  test("layouts are checked", async () => {
    for (const [args, message] of [
      [["--topa", "3K"], /--topa: '3K' is not a region size/],
      [["--topa", "4K+halt"], /'\+halt' is not \+int or \+stop/],
      [["--single-range", "0x1000:0x3000"], /not a power of two/],
      [["--single-range", "0x1800:0x1000"], /not aligned/],
      [["--memory", "m"], /--memory needs --single-range or --topa/],
      [["--topa", "4K", "--single-range", "0:4K"], /not both/],
    ] as [string[], RegExp][]) {
      const r = await ptkit("simulate", ...args, "-o", "x.pt", "jumps.jsonl");
      assert.equal(r.code, 1, args.join(" "));
      assert.match(r.stderr, message);
    }
  });
});

describe("ptkit simulate -- <command>", {
  skip: valgrindVersion() === undefined && "valgrind is not installed",
}, () => {
  test("the printed decode command gives folded stacks with the program's function names", {
    skip: !hasCompiler() && "no C compiler (gcc)",
  }, async () => {
    writeFileSync(
      join(dir, "calls.c"),
      "__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }\n" +
        "__attribute__((noinline)) int middle(int x) { return leaf(x) + leaf(x + 1); }\n" +
        "int main(void) { int s = 0; for (int i = 0; i < 5; i++) s += middle(i); return s == 0; }\n",
    );
    const cc = spawnSync("gcc", ["-O1", "-static", "-o", join(dir, "calls"), join(dir, "calls.c")]);
    assert.equal(cc.status, 0, String(cc.stderr));
    const r = await ptkit("simulate", "-o", "calls.pt", "--", join(dir, "calls"));
    assert.equal(r.code, 0, r.stderr);
    const command = /^decode with {2}ptkit flow (.*)$/m.exec(r.stdout)?.[1];
    assert.ok(command !== undefined && command.length < 80, r.stdout);
    const flow = await ptkit("flow", ...command.split(" "), "--quiet", "--folded", "calls.folded");
    assert.equal(flow.code, 0, flow.stderr);
    const stacks = readFileSync(join(dir, "calls.folded"), "utf8");
    assert.match(stacks, /;main;middle;leaf \d+$/m);
    // System calls are named by the stand-in kernel's symbols.
    assert.match(stacks, /;kernel_syscall \d+$/m);
  });

  test("runs the program under valgrind; the trace decodes with the image it prints", async () => {
    const r = await ptkit("simulate", "--save-log", "true.log", "-o", "true.pt", "--", "/bin/true");
    assert.equal(r.code, 0, r.stderr);
    const count = Number(/^instructions (\d+)$/m.exec(r.stdout)?.[1]);
    assert.ok(count > 10000);
    // A short command: the image is in an options file beside the trace.
    assert.match(r.stdout, /^decode with {2}ptkit flow @true\.pt\.args --pt true\.pt$/m);
    const args = readFileSync(join(dir, "true.pt.args"), "utf8");
    assert.match(args, /^--elf true\.pt\.kernel$/m);
    const decoded = await ptkit("flow", "@true.pt.args", "--pt", "true.pt");
    assert.equal(decoded.code, 0, decoded.stderr);
    const ips = [...decoded.stdout.matchAll(/^([0-9a-f]{16}) /gm)];
    assert.equal(ips.length, count);
    // The saved log converts to the same trace.
    assert.equal((await ptkit("simulate", "-o", "log.pt", "true.log")).code, 0);
    assert.deepEqual(readFileSync(join(dir, "log.pt")), readFileSync(join(dir, "true.pt")));
  });
});
