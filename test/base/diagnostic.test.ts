/**
 * One diagnostic type for every file reader: FileDiagnostic (thrown) and Diagnostic
 * (collected), their one-line and listing forms, and every reader's refusal is one.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type Diagnostic,
  diagnosticLine,
  diagnosticText,
  ErrorCode,
  FileDiagnostic,
  PtError,
} from "../../src/base/index.js";
import { ElfError, parseElf } from "../../src/image/index.js";
import { parseFileHeader } from "../../src/perf/file-header.js";
import { PerfError } from "../../src/perf/index.js";
import { readParquet } from "../../src/shard/index.js";
import { readExecBinary } from "../../src/unit/exec/binary.js";
import { readExecJsonl } from "../../src/unit/exec/jsonl.js";

/** What `read` throws. */
function thrown(read: () => unknown): unknown {
  try {
    read();
  } catch (e) {
    return e;
  }
  return assert.fail("read bad input without an error");
}

test("a FileDiagnostic says what, where and what to do, in one line", () => {
  const e = new FileDiagnostic(-ErrorCode.BadFile, 0x1c, "record size 3 is below 8", "cut the file at 0x1c");
  assert.equal(e.code, ErrorCode.BadFile);
  assert.equal(e.offset, 0x1c);
  assert.equal(e.message, "record size 3 is below 8 at offset 0x1c: cut the file at 0x1c");
  assert.equal(
    diagnosticLine("x.data", e),
    "x.data: record size 3 is below 8 at offset 0x1c: cut the file at 0x1c",
  );
  assert.deepEqual(e.diagnostic, {
    offset: 0x1c,
    message: "record size 3 is below 8",
    hint: "cut the file at 0x1c",
  });
  // The same line from the record a reader collects instead of throwing.
  assert.equal(diagnosticLine("x.data", e.diagnostic), diagnosticLine("x.data", e));
  const d: Diagnostic = { offset: 0x90, message: "unknown record type 99" };
  assert.equal(diagnosticLine("x.data", d), "x.data: unknown record type 99 at offset 0x90");
  assert.equal(diagnosticText(d), "[90: unknown record type 99]");
});

test("PtError is a FileDiagnostic that also names the libipt error", () => {
  const e = new PtError(-ErrorCode.BadPacket, 0x10, undefined, "psb");
  assert.ok(e instanceof FileDiagnostic);
  assert.equal(e.message, "psb: unknown packet at offset 0x10");
  assert.equal(e.problem, "psb: unknown packet");
  assert.equal(new PtError(ErrorCode.NoSync, 0).message, "decoder out of sync at offset 0x0");
  assert.equal(new PtError(ErrorCode.BadOpcode, 3, 0xc2).message, "unknown opcode (byte 0xc2) at offset 0x3");
});

test("every file reader refuses bad input with a FileDiagnostic naming the offset", () => {
  const refusals: [string, unknown][] = [
    ["elf", thrown(() => parseElf(new Uint8Array(8)))],
    ["perf.data", thrown(() => parseFileHeader(new Uint8Array(16)))],
    ["parquet", thrown(() => readParquet(new Uint8Array(16)))],
    ["execution jsonl", thrown(() => readExecJsonl('{"k":"insn"}\n{"k":"nonsense"}\n'))],
    ["execution binary", thrown(() => readExecBinary(new Uint8Array(5)))],
  ];
  for (const [reader, e] of refusals) {
    assert.ok(e instanceof FileDiagnostic, `${reader}: ${String(e)}`);
    assert.equal(e.code, ErrorCode.BadFile, reader);
    assert.ok(e.message.endsWith(` at offset 0x${e.offset.toString(16)}`), `${reader}: ${e.message}`);
  }
  // The readers' own classes and messages are as before.
  assert.ok(refusals[0]![1] instanceof ElfError && refusals[0]![1] instanceof PtError);
  const perf = refusals[1]![1];
  assert.ok(perf instanceof PerfError);
  assert.equal(perf.message, "not a perf.data file: bad magic at offset 0x0");
  assert.equal(diagnosticLine("x", perf), "x: not a perf.data file: bad magic at offset 0x0");
});
