/**
 * Event Trace for the control-flow events besides interrupts, exceptions, IRET and
 * VM exits/entries (event-trace.test.ts): software interrupts (CFE SWINTR with the
 * vector), the VM exit qualification (EVD type 1), SMI/RSM, INIT/SIPI and
 * UINTR/UIRET. Exact packets from hand-written executions, in the forms of libipt's
 * Event Trace test vectors (../shared/corpus/ptt/ptet-*), and the traces decoded by
 * ptkit, whose events must name them and whose instructions must be the executed
 * ones. Every executable's bytes are real code at the addresses the execution gives.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { readExecBinary, writeExecBinary } from "../../../src/unit/exec/binary.js";
import { readExecJsonl, writeExecJsonl } from "../../../src/unit/exec/jsonl.js";
import { runInsns } from "../../flow/run.js";
import {
  caps,
  ET,
  INIT,
  image,
  KERNEL,
  NO_BRANCHES,
  NOP,
  SMI,
  softInt,
  UINTR,
  vmExit,
} from "./event-cases.js";
import { afterPsb, BRANCHES, gen, genBytes } from "./helpers.js";

describe("Event Trace: software interrupts", () => {
  test("INT 0x80: CFE(SWINTR, 0x80), FUP(the INT), TIP; the IRET's CFE back (ptet-int-eretu's form)", () => {
    assert.deepEqual(afterPsb(gen(softInt(2, 0x80), { ctl: ET, caps })), [
      "cfe 14:128",
      "fup 0x1001",
      `tip ${KERNEL}`,
      "cfe 2:0",
      "tip 0x1003",
      "fup 0x1004",
      "tip.pgd -",
    ]);
  });

  test("INT3 with BranchEn=0: CFE(SWINTR, 3) with the IP bit and its FUP (ptet's cfe(14: 3, ip))", () => {
    assert.deepEqual(afterPsb(gen(softInt(1, 3), { ctl: NO_BRANCHES, caps })).slice(0, 2), [
      "cfe 14:3 ip",
      "fup 0x1001",
    ]);
  });

  test("without the swint record (vector unknown) no CFE; without EventEn none either", () => {
    assert.deepEqual(afterPsb(gen(softInt(2, undefined), { ctl: ET, caps })).slice(0, 2), [
      "fup 0x1001",
      `tip ${KERNEL}`,
    ]);
    assert.ok(!gen(softInt(2, 0x80), { ctl: BRANCHES, caps }).some((l) => l.startsWith("cfe")));
  });

  test("ptkit decodes the SWINTR event with its vector at the INT", () => {
    const t = runInsns(genBytes(softInt(2, 0x80), { ctl: ET, caps }), {
      image: image([
        [0, 0x1000, [NOP, 0xcd, 0x80, NOP]],
        [0xffffffff, 0x81000000, [0x66, NOP, 0x48, 0xcf]],
      ]),
    });
    assert.match(t.lines.join("\n"), /\[swintr v128 0x1001\]/);
    assert.ok(!t.lines.some((l) => l.startsWith("[error")), t.lines.join("\n"));
  });
});

describe("Event Trace: VM exit qualification", () => {
  test("EVD(1, qualification) before EVD(2, reason), then CFE(VMEXIT) (ptet-vmexit-vmentry's order)", () => {
    assert.deepEqual(afterPsb(gen(vmExit(true), { ctl: ET, caps })).slice(0, 5), [
      "evd 1 0x181",
      "evd 2 0x30",
      "cfe 8:0",
      "fup 0x1001",
      `tip ${KERNEL}`,
    ]);
    // A reason without a qualification: the reason alone.
    assert.deepEqual(afterPsb(gen(vmExit(false), { ctl: ET, caps })).slice(0, 2), ["evd 2 0x30", "cfe 8:0"]);
  });

  test("a VM exit an exception caused: CFE(VMEXIT_INTR, vector) after both EVDs (ptet-vmexit-vmentry)", () => {
    const x = vmExit(true).replace('{"k":"exit-qual"', '{"k":"exit-vector","vector":14}\n{"k":"exit-qual"');
    assert.match(x, /exit-vector/);
    assert.deepEqual(afterPsb(gen(x, { ctl: ET, caps })).slice(0, 4), [
      "evd 1 0x181",
      "evd 2 0x30",
      "cfe 9:14",
      "fup 0x1001",
    ]);
    const t = runInsns(genBytes(x, { ctl: ET, caps }), {
      image: image([
        [0, 0x1000, [NOP, NOP]],
        [0xffffffff, 0x81000000, [NOP, NOP]],
      ]),
    });
    assert.match(t.lines.join("\n"), /\[vmexit v14 0x1001 vmxr=0x30 vmxq=0x181\]/);
  });

  test("ptkit reports both values on the VM exit", () => {
    const t = runInsns(genBytes(vmExit(true), { ctl: ET, caps }), {
      image: image([
        [0, 0x1000, [NOP, NOP]],
        [0xffffffff, 0x81000000, [NOP, NOP]],
      ]),
    });
    assert.match(t.lines.join("\n"), /\[vmexit v- 0x1001 vmxr=0x30 vmxq=0x181\]/);
    assert.ok(!t.lines.some((l) => l.startsWith("[error")), t.lines.join("\n"));
  });
});

describe("Event Trace: SMI and RSM", () => {
  test("SMI: CFE(SMI), FUP, TIP.PGD() as TraceEn is cleared; RSM: CFE(RSM), CBR, TIP.PGE as it is restored", () => {
    assert.deepEqual(afterPsb(gen(SMI, { ctl: ET, caps })), [
      "cfe 3:0",
      "fup 0x1001",
      "tip.pgd -",
      "cfe 4:0",
      "cbr 37",
      "tip.pge 0x1001",
      "fup 0x1002",
      "tip.pgd -",
    ]);
  });

  test("BranchEn=0: CFE(SMI) has the IP bit and a FUP; CFE(RSM) never has one (ptet: cfe(3, ip), cfe(4))", () => {
    assert.deepEqual(afterPsb(gen(SMI, { ctl: NO_BRANCHES, caps })), [
      "cfe 3:0 ip",
      "fup 0x1001",
      "cfe 4:0",
      "cbr 37",
    ]);
  });

  test("SMM code is not traced, with or without EventEn; ptkit names both events", () => {
    const plain = gen(SMI, { ctl: BRANCHES });
    assert.deepEqual(afterPsb(plain), [
      "fup 0x1001",
      "tip.pgd -",
      "cbr 37",
      "tip.pge 0x1001",
      "fup 0x1002",
      "tip.pgd -",
    ]);
    const t = runInsns(genBytes(SMI, { ctl: ET, caps }), {
      image: image([
        [0, 0x1000, [NOP, NOP]],
        [0, 0x38000, [NOP, 0x0f, 0xaa]],
      ]),
    });
    assert.deepEqual(
      t.ips.map((ip) => ip.toString(16)),
      ["1000", "1001"],
    );
    const lines = t.lines.join("\n");
    assert.match(lines, /\[smi 0x1001\]/);
    assert.match(lines, /\[rsm -\]/);
    assert.ok(!t.lines.some((l) => l.startsWith("[error")), lines);
  });
});

describe("Event Trace: INIT and SIPI", () => {
  test("INIT: CFE(INIT), FUP, TIP.PGD(); SIPI: CFE(SIPI, vector) without IP, MODE.Exec, TIP.PGE (ptet-init-sipi)", () => {
    assert.deepEqual(afterPsb(gen(INIT, { ctl: ET, caps })), [
      "cfe 6:0",
      "fup 0x1001",
      "tip.pgd -",
      "cfe 5:206",
      "mode.exec 16",
      "tip.pge 0xce000",
      "fup 0xce001",
      "tip.pgd -",
    ]);
    assert.deepEqual(afterPsb(gen(INIT, { ctl: NO_BRANCHES, caps })), [
      "cfe 6:0 ip",
      "fup 0x1001",
      "cfe 5:206",
    ]);
  });

  test("ptkit decodes INIT, SIPI and the code the SIPI starts", () => {
    const t = runInsns(genBytes(INIT, { ctl: ET, caps }), {
      image: image([
        [0, 0x1000, [NOP, NOP]],
        [0, 0xce000, [NOP, NOP]],
      ]),
    });
    const lines = t.lines.join("\n");
    assert.match(lines, /\[init 0x1001\]/);
    assert.match(lines, /\[sipi v206 -\]/);
    assert.deepEqual(
      t.ips.map((ip) => ip.toString(16)),
      ["1000", "ce000"],
    );
  });
});

describe("Event Trace: user interrupts", () => {
  test("UINTR: CFE(UINTR, vector), FUP, TIP; UIRET: CFE(UIRET), TIP (ptet-uint-uiret)", () => {
    assert.deepEqual(afterPsb(gen(UINTR, { ctl: ET, caps })), [
      "cfe 12:4",
      "fup 0x1001",
      "tip 0x2000",
      "cfe 13:0",
      "tip 0x1001",
      "fup 0x1002",
      "tip.pgd -",
    ]);
    assert.deepEqual(afterPsb(gen(UINTR, { ctl: NO_BRANCHES, caps })), [
      "cfe 12:4 ip",
      "fup 0x1001",
      "cfe 13:0 ip",
      "fup 0x2001",
    ]);
  });

  test("ptkit decodes both with the executed instructions", () => {
    const t = runInsns(genBytes(UINTR, { ctl: ET, caps }), {
      image: image([
        [0, 0x1000, [NOP, NOP]],
        [0, 0x2000, [NOP, 0xf3, 0x0f, 0x01, 0xec]],
      ]),
    });
    const lines = t.lines.join("\n");
    assert.match(lines, /\[uintr v4 0x1001\]/);
    assert.match(lines, /\[uiret -\]/);
    assert.ok(!t.lines.some((l) => l.startsWith("[error")), lines);
    assert.deepEqual(
      t.ips.map((ip) => ip.toString(16)),
      ["1000", "2000", "2001", "1001"],
    );
  });
});

describe("the new execution records", () => {
  test("round-trip through JSON Lines and the binary form; bad values are refused with the line", () => {
    for (const text of [SMI, INIT, UINTR, vmExit(true), softInt(2, 0x80)]) {
      const x = readExecJsonl(text);
      assert.equal(writeExecJsonl(readExecBinary(writeExecBinary(x))), writeExecJsonl(x));
      assert.equal(writeExecJsonl(readExecJsonl(writeExecJsonl(x))), writeExecJsonl(x));
    }
    assert.throws(() => readExecJsonl('{"k":"uintr","vector":64,"from":1,"to":2}\n'), /line 1: vector 64/);
    assert.throws(() => readExecJsonl('{"k":"sipi","vector":256}\n'), /line 1: vector 256/);
    assert.throws(() => readExecJsonl('{"k":"rsm","to":1}\n'), /line 1: unknown key "to"/);
  });
});
