/**
 * `ptkit flow` behaviour beyond the conformance suite: options and their errors, code
 * loading (--raw ranges, --elf bases, file bytes only), disassembly in both syntaxes,
 * the optional columns, statistics, and errors reported with their trace offsets.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import fc from "fast-check";
import { main } from "../../src/cli/ptkit.js";
import { VERSION } from "../../src/cli/version.js";
import { LOOP_CHECK_AFTER } from "../../src/flow/index.js";
import { Flag, Packet, PacketEncoder, PacketType, syncForward } from "../../src/packet/index.js";
import { ET_EXEC, PF_R, PF_X, writeElf } from "../../tools/elf/elf-writer.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { Trace } from "../event/helpers.js";

/** mov eax, 1; cmp rax, 1; je +2; nop; nop; jmp rax */
const CODE = Uint8Array.from([0xb8, 1, 0, 0, 0, 0x48, 0x83, 0xf8, 1, 0x74, 2, 0x90, 0x90, 0xff, 0xe0]);
const INTEL = ["mov eax, 0x1", "cmp rax, 0x1", "je 0x100d", "jmp rax"];
const IPS = ["1000", "1005", "1009", "100d"];

interface Scenario {
  trace: Uint8Array;
  /** Offsets of the packets after which the unmapped jump is found, and of the second PSB. */
  badTnt: number;
  secondPsb: number;
}

/**
 * Two runs of CODE at `base` (TSC 0x100, then 0x200), each enabled by TIP.PGE, taking
 * the JE and leaving at JMP RAX; between them tracing resumes at base + 0x1000, where
 * nothing is mapped.
 */
function scenario(base: number): Scenario {
  const enc = new PacketEncoder();
  const pkt = new Packet();
  const emit = (type: PacketType, set: (p: Packet) => void = () => {}) => {
    pkt.clear();
    pkt.type = type;
    set(pkt);
    enc.emit(pkt);
  };
  const run = (tsc: number) => {
    emit(PacketType.Psb);
    emit(PacketType.Tsc, (p) => {
      p.lo = tsc;
    });
    emit(PacketType.PsbEnd);
    emit(PacketType.ModeExec, (p) => {
      p.flags = Flag.CsL;
    });
    enc.emitIp(PacketType.TipPge, 0, base);
    emit(PacketType.Tnt8, (p) => {
      p.a = 1;
      p.lo = 1;
    });
    enc.emitSuppressed(PacketType.TipPgd);
  };
  run(0x100);
  enc.emitIp(PacketType.TipPge, 0, base + 0x1000);
  const badTnt = enc.length;
  emit(PacketType.Tnt8, (p) => {
    p.a = 1;
    p.lo = 1;
  });
  enc.emitSuppressed(PacketType.TipPgd);
  const secondPsb = enc.length;
  run(0x200);
  return { trace: enc.bytes().slice(), badTnt, secondPsb };
}

async function run(dir: string, ...argv: string[]) {
  const io = captureIo(dir);
  const code = await main(["flow", ...argv], io);
  const out = io.out.join("");
  return { code, out, lines: out.split("\n").filter((l) => l !== ""), err: io.err.join("") };
}

/** The instruction lines of an output, events and diagnostics left out. */
const insnLines = (lines: string[]) => lines.filter((l) => !l.startsWith("["));

describe("ptkit flow", () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-flow-"));
  const s = scenario(0x1000);
  writeFileSync(join(dir, "t.pt"), s.trace);
  writeFileSync(join(dir, "elf.pt"), scenario(0x400000).trace);
  writeFileSync(join(dir, "code.bin"), CODE);
  const elf = (data: Uint8Array, memsz: bigint) =>
    writeElf({
      is64: true,
      le: true,
      type: ET_EXEC,
      entry: 0x400000n,
      segments: [{ flags: PF_R | PF_X, vaddr: 0x400000n, data, memsz }],
    }).bytes;
  writeFileSync(join(dir, "full.elf"), elf(CODE, BigInt(CODE.length)));
  // The JMP RAX lies beyond p_filesz, in what would be zero fill at run time.
  writeFileSync(join(dir, "short.elf"), elf(CODE.subarray(0, 13), 0x100n));
  const RAW = ["--raw", "code.bin:0x1000"];
  const errorLine = (ip: string) =>
    new RegExp(`^\\[([0-9a-f]+), ${ip}: error: no memory mapped at this address\\]$`);

  test("--help, --version and the command list", async () => {
    const help = await run(dir, "--help");
    assert.equal(help.code, 0);
    assert.match(help.out, /^usage: ptkit flow/);
    for (const o of [
      "--pt",
      "--raw",
      "--elf",
      "--insn-decoder",
      "--att",
      "--stat:blocks",
      "--filter:addr<n>_cfg",
    ])
      assert.ok(help.out.includes(o), o);
    assert.deepEqual((await run(dir, "--version")).lines, [`ptkit flow ${VERSION}`]);
    const io = captureIo(dir);
    await main(["--help"], io);
    assert.match(io.out.join(""), /^ {2}flow {6}/m);
  });

  test("disassembles in Intel syntax, reports the unmapped target with its trace offset, resumes at the next PSB", async () => {
    const r = await run(dir, ...RAW, "--pt", "t.pt");
    assert.equal(r.code, 0, r.err);
    const insns = IPS.map((ip, k) => `${ip.padStart(16, "0")}  ${INTEL[k]}`);
    const error = r.lines.findIndex((l) => errorLine("2000").test(l));
    assert.ok(error > 0, r.out);
    const offset = Number.parseInt(errorLine("2000").exec(r.lines[error]!)![1]!, 16);
    assert.ok(offset >= s.badTnt && offset <= s.secondPsb, `error offset ${offset.toString(16)}`);
    assert.deepEqual(r.lines.slice(0, error), [
      "[enabled]",
      "[exec mode: 64-bit]",
      ...insns,
      "[disabled]",
      "[enabled]",
    ]);
    assert.deepEqual(r.lines.slice(error + 1), ["[enabled]", "[exec mode: 64-bit]", ...insns, "[disabled]"]);
  });

  test("the instruction flow decoder prints what the block decoder prints", async () => {
    // (Not with --offset: the block decoder's offset is the block's, printed for each of its instructions.)
    for (const extra of [[], ["--time", "--event:ip", "--event:time", "--raw-insn", "--att"]]) {
      const block = await run(dir, ...RAW, ...extra, "--pt", "t.pt");
      const insn = await run(dir, "--insn-decoder", ...RAW, ...extra, "--pt", "t.pt");
      assert.deepEqual(insn.lines, block.lines);
    }
  });

  test("decoder options after --pt change nothing, and ptkit says so (ptxed is silent)", async () => {
    const before = await run(dir, ...RAW, "--mtc-freq", "3", "--event:tick", "--pt", "t.pt");
    assert.equal(before.err, "");
    const after = await run(
      dir,
      ...RAW,
      "--pt",
      "t.pt",
      "--mtc-freq",
      "3",
      "--event:tick",
      "--nom-freq",
      "37",
    );
    assert.equal(after.code, 0, after.err);
    assert.deepEqual(
      after.err.trim().split("\n"),
      ["--mtc-freq", "--event:tick", "--nom-freq"].map(
        (o) =>
          `ptkit flow: warning: ${o} after --pt has no effect: options are read in order, give it before --pt.`,
      ),
    );
    assert.equal(after.out, (await run(dir, ...RAW, "--pt", "t.pt")).out);
  });

  test("--att prints AT&T syntax", async () => {
    const lines = insnLines((await run(dir, "--att", ...RAW, "--pt", "t.pt")).lines);
    assert.deepEqual(lines.slice(0, 4), [
      "0000000000001000  mov $0x1,%eax",
      "0000000000001005  cmp $0x1,%rax",
      "0000000000001009  je 0x100d",
      "000000000000100d  jmp *%rax",
    ]);
  });

  test("--raw-insn shows the bytes, padded to 15, before the assembly", async () => {
    const first = insnLines((await run(dir, "--raw-insn", ...RAW, "--pt", "t.pt")).lines)[0]!;
    assert.equal(first, `0000000000001000 b8 01 00 00 00${"   ".repeat(10)}  mov eax, 0x1`);
  });

  test("--no-inst --offset --time: trace offset, time of the last event, IP", async () => {
    const r = await run(dir, "--no-inst", "--offset", "--time", ...RAW, "--pt", "t.pt");
    const lines = insnLines(r.lines);
    assert.equal(lines.length, 8);
    let last = 0;
    lines.forEach((l, k) => {
      const m = /^([0-9a-f]{16}) {2}([0-9a-f]{16}) {2}([0-9a-f]{16})$/.exec(l);
      assert.ok(m, l);
      const offset = Number.parseInt(m[1]!, 16);
      assert.ok(offset >= last && offset <= s.trace.length, l);
      last = offset;
      assert.equal(m[2], (k < 4 ? 0x100 : 0x200).toString(16).padStart(16, "0"));
      assert.equal(m[3], IPS[k % 4]!.padStart(16, "0"));
    });
    // Events carry the offset too.
    assert.ok(
      r.lines.some((l) => /^\[[0-9a-f]{16} {2}enabled\]$/.test(l)),
      r.out,
    );
  });

  test("--event:ip and --event:time show where and when events happened", async () => {
    const r = await run(dir, "--event:ip", "--event:time", ...RAW, "--pt", "t.pt");
    assert.equal(r.lines[0], "[0000000000000100  enabled, ip: 0000000000001000]");
    assert.ok(r.lines.includes("[0000000000000200  exec mode: 64-bit, ip: 0000000000001000]"), r.out);
  });

  test("--stat counts instructions (and blocks with the block decoder), even when quiet", async () => {
    const block = await run(dir, "--stat", ...RAW, "--pt", "t.pt");
    // The empty block that ends in the error counts too, as in ptxed.
    assert.deepEqual(block.lines.slice(-2), ["insn: 8.", "blocks:\t5."]);
    const insn = await run(dir, "--stat", "--insn-decoder", ...RAW, "--pt", "t.pt");
    assert.deepEqual(insn.lines.slice(-2), ["[disabled]", "insn: 8."]);
    assert.deepEqual((await run(dir, "--stat:blocks", ...RAW, "--pt", "t.pt")).lines.slice(-2), [
      "[disabled]",
      "blocks:\t5.",
    ]);
    // Quiet keeps errors and statistics only.
    const quiet = await run(dir, "--quiet", "--stat", ...RAW, "--pt", "t.pt");
    assert.equal(quiet.lines.length, 3);
    assert.match(quiet.lines[0]!, errorLine("2000"));
    assert.deepEqual(quiet.lines.slice(1), ["insn: 8.", "blocks:\t5."]);
    // The instruction decoder, quiet, only counts (InsnUnit.countOnly): the same count
    // and error as when it prints each instruction.
    const quietInsn = await run(dir, "--quiet", "--stat", "--insn-decoder", ...RAW, "--pt", "t.pt");
    assert.equal(quietInsn.lines.length, 2, quietInsn.out);
    assert.match(quietInsn.lines[0]!, errorLine("2000"));
    assert.equal(quietInsn.lines[1], "insn: 8.");
    assert.equal(insnLines(insn.lines.slice(0, -1)).length, 8);
  });

  test("--block:show-blocks marks each block, numbered with --stat", async () => {
    const plain = (await run(dir, "--block:show-blocks", "--no-inst", ...RAW, "--pt", "t.pt")).lines;
    assert.deepEqual(plain.slice(2, 9), [
      "[block]",
      "0000000000001000",
      "0000000000001005",
      "0000000000001009",
      "[block]",
      "000000000000100d",
      "[disabled]",
    ]);
    const numbered = (await run(dir, "--block:show-blocks", "--stat", ...RAW, "--pt", "t.pt")).lines;
    assert.deepEqual(
      numbered.filter((l) => l.startsWith("[block")),
      ["[block 1]", "[block 2]", "[block 3]", "[block 4]", "[block 5]"],
    );
  });

  test("--check finds nothing wrong in a consistent decode", async () => {
    for (const decoder of ["--block-decoder", "--insn-decoder"]) {
      const plain = await run(dir, decoder, ...RAW, "--pt", "t.pt");
      assert.deepEqual((await run(dir, decoder, "--check", ...RAW, "--pt", "t.pt")).lines, plain.lines);
    }
  });

  test("--resync-on-error goes on after the error without losing the next run", async () => {
    const r = await run(dir, "--resync-on-error", ...RAW, "--pt", "t.pt");
    assert.equal(r.lines.filter((l) => errorLine("2000").test(l)).length, 1, r.out);
    assert.deepEqual(insnLines(r.lines).length, 8);
  });

  test("--resync-on-error ends on regressions/flow-1.bin, where libipt repeats an error without end", {
    skip: skipUnlessCorpus("regressions", "flow-1.bin") || skipUnlessCorpus("ptt", "ptxed-block-stat"),
  }, async () => {
    const corpus = corpusPath()!;
    for (const decoder of ["--block-decoder", "--insn-decoder"]) {
      const io = captureIo(corpus);
      // Output is bounded: a decode that repeats itself fails here instead of filling memory.
      let written = 0;
      const stdout = io.stdout;
      io.stdout = (text) => {
        written += text.length;
        if (written > 100_000) throw new Error("unbounded output");
        stdout(text);
      };
      const argv = ["flow", decoder, "--resync-on-error"];
      argv.push(
        "--raw",
        "ptt/ptxed-block-stat/ptxed-block-stat.bin:0x1000",
        "--pt",
        "regressions/flow-1.bin",
      );
      assert.equal(await main(argv, io), 0, io.err.join(""));
      assert.deepEqual(io.out.join("").split("\n"), [
        "0000000000001000  nop",
        "0000000000001001  nop",
        "0000000000001002  nop",
        "0000000000001003  nop",
        "0000000000001004  hlt",
        "[24, 1005: error: no memory mapped at this address]",
        "[disabled]",
        "[24, 0: error: no memory mapped at this address]",
        "[24, 0: resync error: reached end of trace stream]",
        "",
      ]);
    }
  });

  test("code that jumps to itself with trace left that it never reaches ends in an error, exit code 0 as ptxed", async () => {
    // ss jmp 0x1000, and a TNT bit for a conditional branch the loop never gets to.
    writeFileSync(join(dir, "self.bin"), Uint8Array.from([0x36, 0xeb, 0xfd]));
    const trace = new Trace().psb().mode(64).fup(0x1000n).psbend().tnt("!").bytes();
    writeFileSync(join(dir, "self.pt"), trace);
    // The error is at the decoder's offset: past the TNT, the end of the trace.
    const error = `[${trace.length.toString(16)}, 1000: error: trace stream does not match query]`;
    for (const decoder of ["--block-decoder", "--insn-decoder"]) {
      const r = await run(dir, decoder, "--raw", "self.bin:0x1000", "--pt", "self.pt");
      assert.equal(r.code, 0, r.err);
      assert.equal(r.err, "");
      // The loop guard's bound of instructions without trace, then one more back at 0x1000.
      assert.deepEqual(r.lines, [
        ...Array<string>(LOOP_CHECK_AFTER + 1).fill("0000000000001000  jmp 0x1000"),
        error,
      ]);
      const resync = await run(
        dir,
        decoder,
        "--resync-on-error",
        "--raw",
        "self.bin:0x1000",
        "--pt",
        "self.pt",
      );
      assert.equal(resync.code, 0, resync.err);
      assert.deepEqual(resync.lines.slice(-2), [
        error,
        `[${trace.length.toString(16)}, 1000: resync error: reached end of trace stream]`,
      ]);
    }
  });

  test("an unknown CPU is reported on stdout first, and decoding goes on", async () => {
    const r = await run(dir, ...RAW, "--cpu", "0/0", "--pt", "t.pt");
    assert.equal(r.lines[0], "[0, 0: config error: unknown cpu]");
    assert.equal(insnLines(r.lines).length, 8);
    // As ptxed: the CPU is checked at --pt before its file argument is read.
    const bad = await run(dir, ...RAW, "--cpu", "0/0", "--pt", "t.pt:8-4");
    assert.equal(bad.code, 1);
    assert.deepEqual(bad.lines, ["[0, 0: config error: unknown cpu]"]);
    assert.equal(bad.err, "ptkit flow: bad file t.pt:8-4: invalid argument.\n");
  });

  test("--raw ranges map parts of a file; an instruction beyond them is an error at its IP", async () => {
    const whole = (await run(dir, ...RAW, "--pt", "t.pt")).lines;
    const parts = await run(
      dir,
      "--raw",
      "code.bin:0-9:0x1000",
      "--raw",
      "code.bin:9:0x1009",
      "--pt",
      "t.pt",
    );
    assert.deepEqual(parts.lines, whole);
    const cut = await run(dir, "--raw", "code.bin:0-9:0x1000", "--pt", "t.pt");
    assert.match(cut.lines.find((l) => l.includes("error"))!, errorLine("1009"));
  });

  test("--elf maps file bytes only, at p_vaddr or at a base; --verbose lists the segments", async () => {
    const full = await run(dir, "--verbose", "--elf", "full.elf", "--pt", "elf.pt");
    assert.equal(full.code, 0, full.err);
    assert.match(full.lines[0]!, /^full\.elf: offset=0x[0-9a-f]+ size=0xf vaddr=0x400000\.$/);
    assert.deepEqual(insnLines(full.lines.slice(1)).slice(0, 2), [
      "0000000000400000  mov eax, 0x1",
      "0000000000400005  cmp rax, 0x1",
    ]);
    // A base of 0 is no base, as in ptxed; any other base moves the lowest segment there.
    assert.deepEqual((await run(dir, "--elf", "full.elf:0", "--pt", "elf.pt")).lines, full.lines.slice(1));
    assert.deepEqual(
      insnLines((await run(dir, "--elf", "full.elf:0x1000", "--pt", "t.pt")).lines),
      insnLines((await run(dir, ...RAW, "--pt", "t.pt")).lines),
    );
    // p_memsz beyond p_filesz is not mapped: the JMP RAX is missing.
    const short = await run(dir, "--elf", "short.elf", "--pt", "elf.pt");
    assert.match(short.lines.find((l) => l.includes("error"))!, errorLine("40000d"));
  });

  test("bad options stop the command with a message on stderr and exit code 1", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["--bogus"], /unknown option: --bogus\./],
      [["--pt"], /--pt: missing argument\./],
      [["--mtc-freq", "256", "--pt", "t.pt"], /--mtc-freq: value too big: 256\./],
      [["--nom-freq", "x"], /--nom-freq: bad argument: x\./],
      [["--cpuid-0x15.eax", "--pt"], /--cpuid-0x15\.eax: missing argument\./],
      [["--filter:addr0_cfg", "16"], /--filter:addr0_cfg: value too big: 16\./],
      [["--filter:addr4_cfg", "1"], /unknown option: --filter:addr4_cfg\./],
      [["--cpu", "6"], /cpu must be specified as f\/m\[\/s\]/],
      [["--pt", "t.pt", "--cpu", "6/94"], /specify --cpu before --pt/],
      [["--pt", "t.pt", "--insn-decoder"], /specify --insn-decoder before --pt/],
      [["--pt", "t.pt", "--filter:addr0_a", "0x1000"], /specify --filter:addr0_a before --pt/],
      [["--pt", "t.pt", "--pt", "t.pt"], /duplicate pt sources: t\.pt\./],
      [["--iscache-limit", "lots"], /--iscache-limit: bad argument: lots\./],
      [
        ["--timeline", "t.json", "--timeline-summary"],
        /--timeline-summary: only ptkit perf bounds a timeline/,
      ],
      [[...RAW], /no pt file/],
      [["--raw", "code.bin", "--pt", "t.pt"], /--raw code\.bin: failed to parse the base address/],
    ];
    for (const [argv, message] of cases) {
      const r = await run(dir, ...argv);
      assert.equal(r.code, 1, argv.join(" "));
      assert.match(r.err, message, argv.join(" "));
      assert.equal(r.out, "", argv.join(" "));
    }
  });

  test("missing and bad files are errors naming the file (and the offset)", async () => {
    const cases: Array<[string[], RegExp]> = [
      [[...RAW, "--pt", "missing.pt"], /failed to open missing\.pt/],
      [[...RAW, "--pt", "t.pt:0x1000"], /bad offset 0x1000 into t\.pt/],
      [[...RAW, "--pt", "t.pt:0-0x1000"], /bad range 0x1000 in t\.pt/],
      [["--raw", "missing.bin:0x1000", "--pt", "t.pt"], /failed to add missing\.bin at 0x1000: bad file/],
      [["--raw", "code.bin:0x20:0x1000", "--pt", "t.pt"], /offset 0x20 is not below the file size 0xf/],
      [["--raw", "code.bin:8-4:0x1000", "--pt", "t.pt"], /bad file code\.bin:8-4: invalid argument/],
      [["--elf", "missing.elf", "--pt", "t.pt"], /failed to open missing\.elf/],
      [["--elf", "t.pt", "--pt", "t.pt"], /t\.pt: .*not an ELF file.* at offset 0x0/],
      [["--elf", "code.bin", "--pt", "t.pt"], /code\.bin: .*truncated.* at offset 0xf/],
    ];
    for (const [argv, message] of cases) {
      const r = await run(dir, ...argv);
      assert.equal(r.code, 1, argv.join(" "));
      assert.match(r.err, message, argv.join(" "));
    }
  });

  test("--iscache-limit is accepted", async () => {
    assert.deepEqual(
      (await run(dir, "--iscache-limit", "0x1000", ...RAW, "--pt", "t.pt")).lines,
      (await run(dir, ...RAW, "--pt", "t.pt")).lines,
    );
  });

  test("any bytes as trace: no exception, only ptxed's kinds of lines; exit code 0, or 1 when no PSB is found", async () => {
    const kinds = /^(\[.*\]|[0-9a-f]{16}( {2}.*)?|insn: \d+\.|blocks:\t\d+\.)$/;
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 300 }),
        fc.boolean(),
        fc.boolean(),
        async (junk, withPsb, insn) => {
          // Half the cases start with a real PSB+ so that decoding gets past sync.
          const bytes = withPsb ? Uint8Array.from([...s.trace.subarray(0, 0x1c), ...junk]) : junk;
          if (bytes.length === 0) return;
          writeFileSync(join(dir, "junk.pt"), bytes);
          const r = await run(
            dir,
            insn ? "--insn-decoder" : "--block-decoder",
            "--stat",
            ...RAW,
            "--pt",
            "junk.pt",
          );
          // Bytes without any PSB are no trace: one line saying so (ptxed prints nothing).
          const psb = syncForward(bytes, 0) >= 0;
          assert.equal(r.code, psb ? 0 : 1, r.err);
          if (!psb) assert.match(r.err, /^ptkit flow: [^\n]*junk\.pt[^\n]*\n$/);
          for (const l of r.lines) assert.match(l, kinds);
        },
      ),
      { numRuns: 300 },
    );
  });

  test("real code: DynamoRIO's hello in Intel and AT&T syntax", {
    skip: skipUnlessCorpus("real", "dynamorio-drpt2trace"),
  }, async () => {
    const drDir = corpusPath("real", "dynamorio-drpt2trace")!;
    const argv = ["--cpu", "6/85/4", "--elf", "test_simple.raw/hello", "--pt", "test_simple.raw/pt.bin"];
    assert.deepEqual(insnLines((await run(drDir, ...argv)).lines), [
      "0000000000401000  mov eax, 0x1",
      "0000000000401005  mov edi, 0x1",
      "000000000040100a  mov rsi, 0x402000",
      "0000000000401014  mov edx, 0xe",
      "0000000000401019  syscall",
      "000000000040101b  mov eax, 0x3c",
      "0000000000401020  mov edi, 0x0",
      "0000000000401025  syscall",
    ]);
    assert.deepEqual(insnLines((await run(drDir, "--att", ...argv)).lines).slice(0, 3), [
      "0000000000401000  mov $0x1,%eax",
      "0000000000401005  mov $0x1,%edi",
      "000000000040100a  movabs $0x402000,%rsi",
    ]);
  });
});
