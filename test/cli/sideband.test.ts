/**
 * libipt's sideband options in `ptkit dump` and `ptkit flow` beyond the conformance
 * suite: DynamoRIO's capture decoded from its pevent sideband alone (the binary found
 * through the MMAP2 record and --pevent:sysroot, with the parameters of the corpus
 * README), records interleaved with packets by time, and the options' errors.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { main } from "../../src/cli/ptkit.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, DR_FLOW_ARGS, skipUnlessCorpus } from "../corpus.js";

const DIR = "real/dynamorio-drpt2trace/test_simple.raw";

async function run(dir: string, ...argv: string[]) {
  const io = captureIo(dir);
  const code = await main(argv, io);
  const out = io.out.join("");
  return { code, lines: out.split("\n").filter((l) => l !== ""), err: io.err.join("") };
}

const TIMING = DR_FLOW_ARGS;
const PEVENT = [
  "--pevent:sample-type",
  "0x10086",
  "--pevent:time-shift",
  "31",
  "--pevent:time-mult",
  "581029125",
  "--pevent:time-zero",
  "18444502336406842448",
];

/** The 8 instructions of test_simple.templatex. */
const HELLO = [
  "0000000000401000  mov eax, 0x1",
  "0000000000401005  mov edi, 0x1",
  "000000000040100a  mov rsi, 0x402000",
  "0000000000401014  mov edx, 0xe",
  "0000000000401019  syscall",
  "000000000040101b  mov eax, 0x3c",
  "0000000000401020  mov edi, 0x0",
  "0000000000401025  syscall",
];

describe("DynamoRIO capture with its pevent sideband", { skip: skipUnlessCorpus(DIR) }, () => {
  const dir = corpusPath(DIR)!;

  for (const decoder of ["--insn-decoder", "--block-decoder"]) {
    test(`ptkit flow ${decoder}: the image comes from the sideband (mmap of /hello under --pevent:sysroot)`, async () => {
      const r = await run(
        dir,
        "flow",
        decoder,
        ...TIMING,
        ...PEVENT,
        "--pevent:sysroot",
        ".",
        "--sb:switch",
        "--pevent:primary",
        "primary.sideband.pevent",
        "--pevent:secondary",
        "secondary.sideband.pevent",
        "--pt",
        "pt.bin",
      );
      assert.equal(r.code, 0, r.err);
      assert.deepEqual(
        r.lines.filter((l) => !l.startsWith("[")),
        HELLO,
      );
      // ITRACE_START switches at once; COMM.EXEC makes a new context, switched to in the kernel.
      assert.deepEqual(
        r.lines.filter((l) => l.startsWith("[context")),
        ["[context: pid-36af7]", "[context: pid-36af7]"],
      );
      // No --pevent:vdso-x64: the [vdso] mapping is a configuration error, as in ptxed.
      assert.ok(
        r.lines.includes("[primary.sideband.pevent:0000000000000100 sideband error: bad configuration]"),
      );
      assert.ok(r.lines.indexOf("[context: pid-36af7]") < r.lines.indexOf(HELLO[0]!));
    });
  }

  test("--pevent:kcore: code in the kernel image is in every process image", async () => {
    // No sysroot: /hello cannot be mapped from the sideband, but the "kernel" has it.
    const r = await run(
      dir,
      "flow",
      ...TIMING,
      ...PEVENT,
      "--pevent:kcore",
      "hello",
      "--pevent:primary",
      "primary.sideband.pevent",
      "--pt",
      "pt.bin",
    );
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(
      r.lines.filter((l) => !l.startsWith("[")),
      HELLO,
    );
    assert.ok(
      r.lines.includes("[primary.sideband.pevent:0000000000000090 sideband error: bad file]"),
      r.lines.join("\n"),
    );
  });

  test("without the sideband there is no code to decode", async () => {
    const r = await run(dir, "flow", ...TIMING, "--pt", "pt.bin");
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(
      r.lines.filter((l) => !l.startsWith("[")),
      [],
    );
  });

  test("ptkit dump prints records by time, before the timing packet that passes them", async () => {
    const r = await run(
      dir,
      "dump",
      ...TIMING,
      ...PEVENT,
      "--sb:compact",
      "--sb:time",
      "--pevent:primary",
      "primary.sideband.pevent",
      "pt.bin",
    );
    assert.equal(r.code, 0, r.err);
    const itrace = r.lines.findIndex((l) => l.includes("PERF_RECORD_ITRACE_START"));
    assert.match(
      r.lines[itrace]!,
      /^002fa1088fabc52a {2}PERF_RECORD_ITRACE_START {2}36af7\/36af7 {2}\{ 36af7\/36af7 4ec21f916c32c cpu-9 365 \}$/,
    );
    // The first timing packet at or after the record's TSC comes right after the records it passed.
    const firstTsc = r.lines.findIndex((l) => / tsc /.test(l));
    assert.ok(firstTsc > 0);
    assert.ok(r.lines.findIndex((l) => l.includes("PERF_RECORD_SWITCH.IN")) < itrace);
    // Every record is printed, the late ones after the last packet.
    assert.ok(r.lines.at(-1)!.includes("PERF_RECORD"), r.lines.at(-1));
  });
});

describe("sideband option errors", () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-sb-"));
  writeFileSync(join(dir, "t.pt"), new Uint8Array(16));
  const cases: Array<[string[], RegExp]> = [
    [["flow", "--pevent:primary"], /--pevent:primary: missing argument/],
    [["flow", "--pevent:time-shift", "0x10000"], /--pevent:time-shift: value too big: 0x10000/],
    [["flow", "--pevent:time-mult", "x"], /--pevent:time-mult: bad argument: x/],
    [["flow", "--pevent:kernel-start", "--pt"], /--pevent:kernel-start: missing argument/],
    [["flow", "--pevent", "x.sb"], /unknown option: --pevent\./],
    [["flow", "--pevent:sample-config", "7"], /--pevent:sample-config: bad sample config: 7\./],
    [["dump", "--pevent:sample-config", "7:0x100000000", "t.pt"], /bad sample config: 7:0x100000000/],
    [["dump", "--sb:switch", "t.pt"], /unknown option: --sb:switch/],
    [["flow", "--pevent:primary", "missing.sb", "--pt", "t.pt"], /error loading missing\.sb/],
    [["dump", "--pevent:primary", "missing.sb:0x10", "t.pt"], /error loading missing\.sb/],
    [["dump", "--pevent:primary", "t.pt:0x11", "t.pt"], /error loading t\.pt: offset 0x11 is past its end/],
    [["dump", "--pevent:primary", "t.pt:0x10-0x8", "t.pt"], /bad file t\.pt:0x10-0x8: invalid argument/],
  ];
  for (const [argv, message] of cases) {
    test(argv.join(" "), async () => {
      const r = await run(dir, ...argv);
      assert.equal(r.code, 1);
      assert.match(r.err, message);
    });
  }
});
