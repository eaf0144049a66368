/**
 * IA32_RTIT_* changes made by XRSTORS, XSAVES and VM entry/exit MSR loads as well as
 * WRMSR (`msr-load` records and their `by`): the same rules and packets whatever made the
 * change (SDM Vol. 3C §36.2.7.1: the semantics of MSR writes "generally apply to
 * explicit WRMSR ..., using VM-exit or VM-entry MSR load list ..., XRSTORS ... and
 * the write to IA32_RTIT_CTL.TraceEn by XSAVES"), XRSTORS's own #GP with TraceEn=1
 * (Vol. 1 §13.5.6), and a VM exit or entry whose load clears TraceEn ending its
 * transfer in TIP.PGD(). (RSM's restore of TraceEn: event-trace-events.test.ts.)
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { readExecBinary, writeExecBinary } from "../../../src/unit/exec/binary.js";
import { readExecJsonl, writeExecJsonl } from "../../../src/unit/exec/jsonl.js";
import { generate } from "../../../src/unit/gen/index.js";
import { Msr } from "../../../src/unit/msr-layout.js";
import { runInsns } from "../../flow/run.js";
import { image, KERNEL, NOP } from "./event-cases.js";
import { afterPsb, BRANCHES, ctl, gen, genBytes, insn, jsonl, msrs } from "./helpers.js";

const hex = (v: { hi: number; lo: number }) =>
  `0x${((BigInt(v.hi) << 32n) | BigInt(v.lo >>> 0)).toString(16)}`;
const ON = hex(ctl(BRANCHES));
const OFF = hex(ctl({ ...BRANCHES, TraceEn: 0 }));
const CTL = Msr.Ctl;

/**
 * Tracing off; nop at 0x1000; a record sets TraceEn (`byOn`); nops at 0x1001, 0x1002;
 * a record clears it (`byOff`); nop. As a context switch does it: XRSTORS restores,
 * XSAVES saves and clears.
 */
function toggle(byOn?: string, byOff?: string): string {
  const w = (value: string, by?: string) =>
    by && by !== "wrmsr" ? { k: "msr-load", msr: CTL, value, by } : { k: "wrmsr", msr: CTL, value };
  return jsonl(
    insn(0x1000, 1),
    w(ON, byOn),
    insn(0x1001, 1),
    insn(0x1002, 1),
    w(OFF, byOff),
    insn(0x1003, 1),
    { k: "end", ip: "0x1004" },
  );
}
const OFF_SETUP = { ctl: { ...BRANCHES, TraceEn: 0 } };

/** Guest nop at 0x1000, a VM exit (reason 48) before 0x1001 into the VMM's nop; the exit's loads follow it. */
function vmExit(...loads: object[]): string {
  return jsonl(
    { k: "nonroot", nr: true },
    insn(0x1000, 1),
    { k: "vmexit", reason: 48, from: "0x1001", to: KERNEL },
    { k: "nonroot", nr: false },
    ...loads,
    insn(KERNEL, 1),
    { k: "end", ip: "0xffffffff81000001" },
  );
}

describe("MSR changes by XRSTORS and XSAVES", () => {
  test("the same packets as WRMSR: TIP.PGE and PSB+ when set, FUP and TIP.PGD() when cleared", () => {
    const wrmsr = gen(toggle(), OFF_SETUP);
    assert.deepEqual(wrmsr.slice(0, 2), ["mode.exec 64", "tip.pge 0x1001"]);
    assert.deepEqual(afterPsb(wrmsr), ["fup 0x1003", "tip.pgd -"]);
    assert.deepEqual(gen(toggle("xrstors", "xsaves"), OFF_SETUP), wrmsr);
    assert.deepEqual(gen(toggle("xrstors"), OFF_SETUP), wrmsr);
    // XRSTORS cannot clear TraceEn: its #GP leaves tracing on to the end.
    assert.deepEqual(afterPsb(gen(toggle("wrmsr", "xrstors"), OFF_SETUP)), ["fup 0x1004", "tip.pgd -"]);
  });

  test("XRSTORS with TraceEn=1 is a #GP that changes nothing, where a WRMSR of the same value is allowed", () => {
    const run = (by: string) =>
      generate(
        readExecJsonl(
          jsonl(
            insn(0x1000, 1),
            by === "wrmsr" ? { k: "wrmsr", msr: CTL, value: ON } : { k: "msr-load", msr: CTL, value: ON, by },
            insn(0x1001, 1),
            {
              k: "end",
              ip: "0x1002",
            },
          ),
        ),
        { msrs: msrs({ ctl: BRANCHES }), cyclesPerInsn: 0 },
      );
    assert.deepEqual(run("wrmsr").faults, []);
    const x = run("xrstors");
    assert.equal(x.faults.length, 1);
    assert.equal(x.faults[0]!.record, 1);
    assert.equal(x.faults[0]!.fault.field, "TraceEn");
    assert.match(x.faults[0]!.fault.reason, /XRSTORS .*TraceEn=1/);
    assert.deepEqual(x.bytes, run("wrmsr").bytes);
  });

  test("msr-load records round-trip through JSON Lines and the binary form; bad values are refused", () => {
    const x = readExecJsonl(toggle("xrstors", "xsaves"));
    assert.equal(writeExecJsonl(readExecJsonl(writeExecJsonl(x))), writeExecJsonl(x));
    assert.equal(writeExecJsonl(readExecBinary(writeExecBinary(x))), writeExecJsonl(x));
    assert.match(writeExecJsonl(x), /"k":"msr-load","msr":1392,"value":"0x210c","by":"xsaves"/);
    assert.throws(
      () => readExecJsonl(`{"k":"msr-load","msr":${CTL},"value":1,"by":"wrmsr"}\n`),
      /line 1: by: expected one of xrstors, xsaves, vm-entry, vm-exit/,
    );
    assert.throws(() => readExecJsonl(`{"k":"msr-load","msr":${CTL},"value":1}\n`), /line 1: missing "by"/);
    // wrmsr records keep their fields (and their binary layout).
    assert.throws(
      () => readExecJsonl(`{"k":"wrmsr","msr":${CTL},"value":1,"by":"xrstors"}\n`),
      /unknown key "by"/,
    );
  });
});

describe("MSR loads of VM entries and exits", () => {
  test("a VM exit that clears IA32_RTIT_CTL ends in TIP.PGD(): the host is not named", () => {
    const clear = { k: "msr-load", msr: CTL, value: OFF, by: "vm-exit" };
    assert.deepEqual(afterPsb(gen(vmExit(clear), { ctl: BRANCHES })), ["fup 0x1001", "tip.pgd -"]);
    // A WRMSR in the host instead: the exit is traced, the host's first instruction is where tracing stops.
    const wrmsr = { k: "wrmsr", msr: CTL, value: OFF };
    assert.deepEqual(afterPsb(gen(vmExit(wrmsr), { ctl: BRANCHES })), [
      "fup 0x1001",
      "pip 0x0",
      `tip ${KERNEL}`,
      `fup ${KERNEL}`,
      "tip.pgd -",
    ]);
  });

  test("with Event Trace: EVD and CFE(VMEXIT) first, then FUP and TIP.PGD()", () => {
    const clear = {
      k: "msr-load",
      msr: CTL,
      value: hex(ctl({ ...BRANCHES, EventEn: 1, TraceEn: 0 })),
      by: "vm-exit",
    };
    assert.deepEqual(
      afterPsb(gen(vmExit(clear), { ctl: { ...BRANCHES, EventEn: 1 }, caps: { eventTrace: true } })),
      ["evd 2 0x30", "cfe 8:0", "fup 0x1001", "tip.pgd -"],
    );
  });

  test("ptkit decodes the guest's instructions and the disable at the exit", () => {
    const clear = { k: "msr-load", msr: CTL, value: OFF, by: "vm-exit" };
    const t = runInsns(genBytes(vmExit(clear), { ctl: BRANCHES }), {
      image: image([
        [0, 0x1000, [NOP, NOP]],
        [0xffffffff, 0x81000000, [NOP, NOP]],
      ]),
    });
    assert.deepEqual(
      t.ips.map((ip) => ip.toString(16)),
      ["1000"],
    );
    assert.ok(!t.lines.some((l) => l.startsWith("[error")), t.lines.join("\n"));
  });

  test("a VM entry that loads TraceEn=1: TIP.PGE at the guest's first instruction, PSB+ (PacketByteCnt 0)", () => {
    const x = jsonl(
      insn(0x5000, 3, "vm-entry"),
      { k: "nonroot", nr: true },
      { k: "msr-load", msr: CTL, value: ON, by: "vm-entry" },
      insn(0x1000, 1),
      { k: "end", ip: "0x1001" },
    );
    const list = gen(x, OFF_SETUP);
    assert.deepEqual(list.slice(0, 2), ["mode.exec 64", "tip.pge 0x1000"]);
    assert.ok(list.includes("pip 0x0 nr"));
    // A VM entry into the guest with a load that clears TraceEn: TIP.PGD() at the VMRESUME.
    const y = jsonl(
      insn(0x5000, 3, "vm-entry"),
      { k: "nonroot", nr: true },
      { k: "msr-load", msr: CTL, value: OFF, by: "vm-entry" },
      insn(0x1000, 1),
      { k: "end", ip: "0x1001" },
    );
    assert.deepEqual(afterPsb(gen(y, { ctl: BRANCHES })), ["tip.pgd -"]);
  });
});
