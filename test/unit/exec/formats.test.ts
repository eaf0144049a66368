/**
 * Executions: the builder's checks, JSON Lines and binary round trips, and rejection
 * of bad input with its line and byte offset (never another kind of exception).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { PtError } from "../../../src/base/errors.js";
import { ExecMode, InsnClass, InsnFlag } from "../../../src/isa/types.js";
import { readExecBinary, writeExecBinary } from "../../../src/unit/exec/binary.js";
import { readExecJsonl, writeExecJsonl } from "../../../src/unit/exec/jsonl.js";
import { ExecBuilder, ExecEvent, type Execution, WakeReason } from "../../../src/unit/exec/types.js";
import { randomProgram, randomRun } from "../gen/random-program.js";
import { rng } from "../output/helpers.js";

/** One record of every kind. */
const EVERY_KIND = [
  '{"k":"cpl","cpl":3}',
  '{"k":"cr3","cr3":"0x1000"}',
  '{"k":"mode","mode":32}',
  '{"k":"nonroot","nr":true}',
  '{"k":"vmcs","vmcs":"0x5000"}',
  '{"k":"insn","ip":"0x401000","size":2,"class":"cond-branch"}',
  '{"k":"interrupt","vector":32,"from":"0x401010","to":"0xffffffff81000000"}',
  '{"k":"exception","vector":14,"from":"0xffffffff81000000","to":"0xffffffff81000100"}',
  '{"k":"vmexit","reason":48,"from":"0xffffffff81000100","to":"0xffffffff81000200"}',
  '{"k":"insn","ip":"0xffffffff81000200","size":5,"class":"xbegin"}',
  '{"k":"tsx-abort","from":"0xffffffff81000205","to":"0xffffffff81000300"}',
  '{"k":"insn","ip":"0xffffffff81000300","size":5,"class":"ptwrite"}',
  '{"k":"ptw","value":"0xffffffffffffffff","bytes":8}',
  '{"k":"insn","ip":"0xffffffff81000305","size":3,"class":"mwait"}',
  '{"k":"mwait","hints":32,"ext":1}',
  '{"k":"sleep","cstate":6,"substate":2,"hw":true}',
  '{"k":"wake","last":6,"deepest":6,"reasons":["interrupt","hw"]}',
  '{"k":"cycles","n":"0x1fffffffffffff"}',
  '{"k":"ticks","n":"0x3e8"}',
  '{"k":"cbr","ratio":24}',
  '{"k":"wrmsr","msr":1392,"value":"0x2001"}',
  '{"k":"insn","ip":"0xffffffff81000308","size":5,"class":"call","zlc":true}',
  '{"k":"end","ip":"0xffffffff8100030d"}',
];

function sameExecution(a: Execution, b: Execution): void {
  for (const key of [
    "ipHi",
    "ipLo",
    "info",
    "evAt",
    "evKind",
    "evA",
    "evB",
    "evHi",
    "evLo",
    "evToHi",
    "evToLo",
  ] as const) {
    assert.deepEqual(Array.from(a[key]), Array.from(b[key]), key);
  }
}

/** Throws a PtError whose message matches `re` and whose offset is `offset`. */
function rejects(fn: () => unknown, re: RegExp, offset?: number): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof PtError, `not a PtError: ${String(e)}`);
    assert.match(e.message, re);
    if (offset !== undefined) assert.equal(e.offset, offset);
    return true;
  });
}

describe("JSON Lines", () => {
  test("every kind reads back as written, and writing gives back the same text", () => {
    const text = `${EVERY_KIND.join("\n")}\n`;
    const x = readExecJsonl(text);
    assert.equal(x.insnCount, 5);
    assert.equal(x.eventCount, EVERY_KIND.length - 5);
    assert.equal(writeExecJsonl(x), text);
    const hw = x.evKind.indexOf(ExecEvent.Sleep);
    assert.equal(x.evLo[hw], 1);
    const wake = x.evKind.indexOf(ExecEvent.Wake);
    assert.equal(x.evLo[wake], WakeReason.Interrupt | WakeReason.Hw);
    assert.equal(x.evA[x.evKind.indexOf(ExecEvent.Mode)], ExecMode.Bits32);
  });

  test("numbers: JSON integers, decimal and hex strings; flags 0/1 or booleans; blank lines skipped", () => {
    const a = readExecJsonl('{"k":"insn","ip":4198400,"size":"2"}\n\n{"k":"nonroot","nr":1}\n');
    const b = readExecJsonl('{"k":"insn","ip":"4198400","size":2}\n{"k":"nonroot","nr":true}\n');
    sameExecution(a, b);
    assert.equal(a.ipLo[0], 0x401000);
  });

  const bad: [string, RegExp][] = [
    ["{", /line 2: .*JSON/],
    ["[1]", /line 2: not a JSON object/],
    ['{"k":"jump"}', /line 2: unknown kind "jump"/],
    ['{"ip":"0x1","size":1}', /line 2: missing "k"/],
    ['{"k":"insn","ip":"0x1"}', /line 2: missing "size"/],
    ['{"k":"insn","ip":"0x1","size":16}', /line 2: size 16 is not in 1\.\.15/],
    ['{"k":"insn","ip":"0x1","size":1,"class":"jmp"}', /line 2: class: "jmp" is not an instruction class/],
    ['{"k":"insn","ip":"0x1","size":1,"zlc":true}', /line 2: only a direct call can be a zero-length call/],
    ['{"k":"insn","ip":"0x1","size":1,"target":"0x2"}', /line 2: unknown key "target"/],
    ['{"k":"insn","ip":"0x10000000000000000","size":1}', /line 2: ip: "0x10000000000000000" is not 0x-hex/],
    [
      '{"k":"insn","ip":"18446744073709551616","size":1}',
      /line 2: ip: 18446744073709551616 is above 2\^64-1/,
    ],
    ['{"k":"insn","ip":-1,"size":1}', /line 2: ip: -1 is not an integer/],
    ['{"k":"insn","ip":1.5,"size":1}', /line 2: ip: 1.5 is not an integer/],
    ['{"k":"cpl","cpl":4}', /line 2: cpl 4 is not in 0\.\.3/],
    ['{"k":"mode","mode":8}', /line 2: mode: expected 16, 32 or 64/],
    ['{"k":"vmcs","vmcs":"0x1001"}', /line 2: the VMCS pointer is not 4 KiB aligned/],
    ['{"k":"interrupt","vector":256,"from":"0x1","to":"0x2"}', /line 2: vector 256 is not in 0\.\.255/],
    ['{"k":"interrupt","vector":1,"from":"0x1"}', /line 2: missing "to"/],
    ['{"k":"ptw","value":"0x1","bytes":4}', /line 2: ptw must follow a ptwrite instruction/],
    ['{"k":"mwait","hints":1,"ext":0}', /line 2: mwait must follow an mwait instruction/],
    ['{"k":"sleep","cstate":16,"substate":0}', /line 2: cstate or substate is not in 0\.\.15/],
    ['{"k":"wake","last":1,"deepest":1,"reasons":["timer"]}', /line 2: reasons: "timer" is not interrupt/],
    ['{"k":"cycles","n":"0x20000000000000"}', /line 2: the count is above 2\^53-1/],
    ['{"k":"cbr","ratio":0}', /line 2: ratio 0 is not in 1\.\.255/],
    ['{"k":"nonroot","nr":2}', /line 2: nr: expected true or false/],
  ];
  for (const [line, re] of bad) {
    test(`rejects ${line}`, () => {
      const first = '{"k":"cpl","cpl":3}\n';
      rejects(() => readExecJsonl(`${first}${line}\n`), re, first.length);
    });
  }

  test("rejects records after end, and a PTWRITE or MWAIT without its payload (at the end too)", () => {
    rejects(
      () => readExecJsonl('{"k":"end","ip":"0x1"}\n{"k":"cpl","cpl":0}\n'),
      /line 2: nothing may follow an end record/,
    );
    rejects(
      () => readExecJsonl('{"k":"insn","ip":"0x1","size":5,"class":"ptwrite"}\n{"k":"cpl","cpl":0}\n'),
      /line 2: a ptwrite instruction must be followed by its ptw record/,
    );
    const text = '{"k":"insn","ip":"0x1","size":3,"class":"mwait"}\n';
    rejects(() => readExecJsonl(text), /at its end: an mwait instruction must be followed/, text.length + 1);
  });

  test("byte offsets count UTF-8 bytes, and bad UTF-8 is rejected", () => {
    const first = '{"k":"cpl","cpl":3,"é":1}';
    rejects(() => readExecJsonl(`{"k":"cpl","cpl":3}\n${first}\n`), /line 2: unknown key "é"/, 20);
    const lines = `{"k":"insn","ip":"0x1","size":1,"class":"other"}\n${"x"}`;
    const offset = Buffer.byteLength(lines.split("\n")[0]!) + 1;
    rejects(() => readExecJsonl(lines), /line 2/, offset);
    rejects(() => readExecJsonl(Uint8Array.from([0x7b, 0xff, 0x7d])), /not UTF-8/, 0);
  });
});

describe("binary form", () => {
  test("round trips: random runs and every record kind, through binary and JSON Lines", () => {
    const execs = [readExecJsonl(`${EVERY_KIND.join("\n")}\n`)];
    for (let seed = 1; seed <= 10; seed++) {
      execs.push(
        randomRun(randomProgram(seed, 60), seed, { insns: 2000, interrupts: 0.02, wildReturns: 0.1 }),
      );
    }
    for (const x of execs) {
      const bin = writeExecBinary(x);
      sameExecution(readExecBinary(bin), x);
      sameExecution(readExecJsonl(writeExecJsonl(readExecBinary(bin))), x);
    }
  });

  test("sequential instructions take 3 bytes, others 11", () => {
    const x = new ExecBuilder()
      .insn(0, 0x1000, 2, InsnClass.Other)
      .insn(0, 0x1002, 5, InsnClass.Call)
      .insn(0, 0x2000, 1, InsnClass.Return)
      .build();
    assert.equal(writeExecBinary(x).length, 8 + 11 + 3 + 11);
  });

  test("rejects a bad header, tags, info bits and truncation with the record's offset", () => {
    const good = writeExecBinary(readExecJsonl(`${EVERY_KIND.join("\n")}\n`));
    rejects(() => readExecBinary(good.subarray(0, 5)), /no PTKEXEC header/, 0);
    const v2 = good.slice();
    v2[7] = 2;
    rejects(() => readExecBinary(v2), /version 2 is not 1/, 7);
    const tag = good.slice();
    tag[8] = 0x05;
    rejects(() => readExecBinary(tag), /tag 0x5 is unknown/, 8);
    const info = writeExecBinary(new ExecBuilder().insn(0, 0, 1, 0).build());
    info[10] = 0x80;
    rejects(() => readExecBinary(info), /info 0x8001 has undefined bits/, 8);
  });

  test("every truncation and random corruption either reads or is a PtError, never anything else", () => {
    const good = writeExecBinary(readExecJsonl(`${EVERY_KIND.join("\n")}\n`));
    for (let n = 0; n < good.length; n++) {
      try {
        readExecBinary(good.subarray(0, n));
      } catch (e) {
        assert.ok(e instanceof PtError, `truncated at ${n}: ${String(e)}`);
      }
    }
    const r = rng(99);
    for (let k = 0; k < 2000; k++) {
      const bad = good.slice();
      for (let f = 0; f < 3; f++) bad[8 + Math.floor(r() * (bad.length - 8))] = Math.floor(r() * 256);
      try {
        readExecBinary(bad);
      } catch (e) {
        assert.ok(e instanceof PtError, String(e));
      }
    }
  });
});

describe("builder", () => {
  test("checks each record and names the problem with its index", () => {
    const b = new ExecBuilder().cpl(3);
    assert.throws(
      () => b.insn(0, 0x1000, 0, InsnClass.Other),
      /size 0 is not in 1\.\.15: invalid argument at offset 0x1/,
    );
    assert.throws(() => b.insn(0, 0x1000, 1, 99), /class 99 is unknown/);
    assert.throws(() => b.insn(0, 0x1000, 1, InsnClass.Jump, InsnFlag.ZeroLengthCall), /only a direct call/);
    assert.throws(() => b.event(ExecEvent.Cpl, 0, 1), /a field the kind does not use is set/);
    assert.throws(() => b.event(99 as ExecEvent), /event kind 99 is unknown/);
    assert.throws(() => b.transfer(ExecEvent.Cpl, 0, 0, 1, 0, 2), /cpl is not a transfer/);
    assert.throws(() => b.ptw(4, 1, 0), /a 4-byte value is above 2\^32-1/);
    assert.throws(() => b.ptw(4, 0, 1), /ptw must follow a ptwrite/);
    b.insn(0, 0x1000, 5, InsnClass.PtWrite);
    assert.throws(() => b.build(), /a ptwrite instruction must be followed by its ptw record/);
    b.ptw(4, 0, 7);
    assert.throws(() => b.ptw(4, 0, 7), /ptw must follow a ptwrite/);
    const x = b.build();
    assert.equal(x.recordCount, 3);
    assert.equal(x.evAt[1], 1, "the ptw comes after one instruction");
  });
});
