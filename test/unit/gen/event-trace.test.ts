/**
 * Event Trace (IA32_RTIT_CTL.EventEn): the CFE and EVD packets of interrupts,
 * exceptions, IRET and VM exits, and RFLAGS.IF in MODE.Exec (rules.ts
 * `eventTrace`), exact packets from hand-written executions; the traces decoded by
 * ptkit's instruction flow decoder, whose events name them.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Image } from "../../../src/image/index.js";
import { readExecBinary, writeExecBinary } from "../../../src/unit/exec/binary.js";
import { readExecJsonl, writeExecJsonl } from "../../../src/unit/exec/jsonl.js";
import { MsrFile } from "../../../src/unit/msr-file.js";
import { Msr } from "../../../src/unit/msr-layout.js";
import { presetCapabilities } from "../../../src/unit/presets.js";
import { runInsns } from "../../flow/run.js";
import { afterPsb, BRANCHES, ctl, gen, genBytes, insn, jsonl } from "./helpers.js";

const KERNEL = "0xffffffff81000000";
const IRET_AT = "0xffffffff81000002";
const caps = { eventTrace: true };
const ET = { ...BRANCHES, EventEn: 1 };

/** User code; an interrupt (or another transfer) before 0x1003 into a handler that runs with IF=0 and IRETs back. */
function run(transfer: object, iflags = true): string {
  return jsonl(
    { k: "cpl", cpl: 3 },
    insn(0x1000, 1),
    insn(0x1001, 2, "cond-branch"),
    transfer,
    { k: "cpl", cpl: 0 },
    ...(iflags ? [{ k: "if", if: false }] : []),
    insn(KERNEL, 2),
    insn(IRET_AT, 2, "iret"),
    { k: "cpl", cpl: 3 },
    ...(iflags ? [{ k: "if", if: true }] : []),
    insn(0x1003, 1),
    { k: "end", ip: "0x1004" },
  );
}
const INTR = { k: "interrupt", vector: 32, from: "0x1003", to: KERNEL };
const PF = { k: "exception", vector: 14, from: "0x1003", to: KERNEL };

/** A page fault with its address (the `cr2` record after the transfer). */
function pageFault(): string {
  return run(PF).replace('"cpl":0}', '"cpl":0}\n{"k":"cr2","cr2":"0xdead0"}');
}

describe("Event Trace packets", () => {
  test("interrupt: CFE(INTR, vector) before the FUP; MODE.Exec with the handler's IF=0; CFE(IRET) and IF=1 back", () => {
    const list = gen(run(INTR), { ctl: ET, caps });
    // PSB+ carries IF in MODE.Exec.
    assert.ok(list.slice(0, list.indexOf("psbend")).includes("mode.exec 64 if"));
    assert.deepEqual(afterPsb(list), [
      "tnt N",
      "cfe 1:32",
      "fup 0x1003",
      "mode.exec 64",
      `tip ${KERNEL}`,
      "cfe 2:0",
      "mode.exec 64 if",
      "tip 0x1003",
      "fup 0x1004",
      "tip.pgd -",
    ]);
  });

  test("an exception gives its vector (#PF 14); a page fault's address goes in an EVD before the CFE", () => {
    assert.deepEqual(afterPsb(gen(run(PF), { ctl: ET, caps })).slice(1, 3), ["cfe 1:14", "fup 0x1003"]);
    assert.deepEqual(afterPsb(gen(pageFault(), { ctl: ET, caps })).slice(1, 4), [
      "evd 0 0xdead0",
      "cfe 1:14",
      "fup 0x1003",
    ]);
    // Out of context at the fault (kernel tracing only): no address.
    const kernel = gen(pageFault(), { ctl: { ...ET, User: 0 }, caps });
    assert.deepEqual(kernel.slice(kernel.lastIndexOf("psbend") + 1).slice(0, 2), [
      "cfe 1:14",
      "mode.exec 64",
    ]);
  });

  test("VM entry: CFE(VMENTRY) with a FUP of its own (the VMRESUME), then PIP and TIP", () => {
    const x = jsonl(
      insn(0x1000, 3, "vm-entry"),
      { k: "nonroot", nr: true },
      { k: "cr3", cr3: "0x5000" },
      insn(0x2000, 1),
      { k: "end", ip: "0x2001" },
    );
    assert.deepEqual(afterPsb(gen(x, { ctl: ET, caps })).slice(0, 4), [
      "cfe 7:0 ip",
      "fup 0x1000",
      "pip 0x5000 nr",
      "tip 0x2000",
    ]);
  });

  test("tracing user code only: CFE, FUP, TIP.PGD into the handler; CFE(IRET), TIP.PGE out of it", () => {
    assert.deepEqual(afterPsb(gen(run(INTR), { ctl: { ...ET, OS: 0 }, caps })), [
      "tnt N",
      "cfe 1:32",
      "fup 0x1003",
      "tip.pgd -",
      "cfe 2:0",
      "tip.pge 0x1003",
      "fup 0x1004",
      "tip.pgd -",
    ]);
  });

  test("tracing the kernel only: CFE without IP, MODE.Exec, TIP.PGE; CFE(IRET) before TIP.PGD()", () => {
    const list = gen(run(INTR), { ctl: { ...ET, User: 0 }, caps });
    assert.deepEqual(list.slice(list.lastIndexOf("psbend") + 1), [
      "cfe 1:32",
      "mode.exec 64",
      `tip.pge ${KERNEL}`,
      "cfe 2:0",
      "tip.pgd -",
    ]);
  });

  test("BranchEn=0: the CFE has the IP bit and a FUP of its own", () => {
    assert.deepEqual(afterPsb(gen(run(INTR), { ctl: { ...ET, BranchEn: 0 }, caps })), [
      "cfe 1:32 ip",
      "fup 0x1003",
      "cfe 2:0 ip",
      `fup ${IRET_AT}`,
    ]);
  });

  test("VM exit: EVD with the exit reason, CFE(VMEXIT), then the transfer", () => {
    const vmexit = { k: "vmexit", reason: 48, from: "0x1003", to: KERNEL };
    assert.deepEqual(afterPsb(gen(run(vmexit), { ctl: ET, caps })).slice(0, 4), [
      "tnt N",
      "evd 2 0x30",
      "cfe 8:0",
      "fup 0x1003",
    ]);
  });

  test("CLI/STI/POPF (an if record after a plain instruction): MODE.Exec with the new IF, FUP(next IP)", () => {
    const x = jsonl(insn(0x1000, 1), { k: "if", if: false }, insn(0x1001, 1), { k: "end", ip: "0x1002" });
    assert.deepEqual(afterPsb(gen(x, { ctl: ET, caps })), [
      "mode.exec 64",
      "fup 0x1001",
      "fup 0x1002",
      "tip.pgd -",
    ]);
  });

  test("without EventEn nothing changes: the same bytes as the execution without if records", () => {
    for (const c of [BRANCHES, { ...BRANCHES, OS: 0 }, { ...BRANCHES, User: 0 }]) {
      const a = genBytes(run(INTR), { ctl: c, caps });
      const b = genBytes(run(INTR, false), { ctl: c });
      assert.deepEqual(a, b);
      assert.ok(!gen(run(INTR), { ctl: c, caps }).some((l) => l.startsWith("cfe") || l.endsWith(" if")));
    }
  });

  test("ptkit's decoder reports the interrupt with its vector and the IRET", () => {
    const bytes = genBytes(pageFault(), { ctl: ET, caps });
    const image = new Image();
    // nop; jne +0 (not taken: falls through); nop at the target; the handler: nop nop (2 bytes), iretq.
    image.addRaw("user", Uint8Array.from([0x90, 0x75, 0x00, 0x90, 0x90]), 0, 0x1000);
    image.addRaw("kernel", Uint8Array.from([0x66, 0x90, 0x48, 0xcf]), 0xffffffff, 0x81000000);
    const t = runInsns(bytes, { image });
    const lines = t.lines.join("\n");
    assert.match(lines, /\[interrupt v14 0x1003/);
    assert.match(lines, /cr2=0xdead0/);
    assert.match(lines, /\[iret -\]/);
    assert.deepEqual(
      t.ips.map((ip) => ip.toString(16)),
      ["1000", "1001", "ffffffff81000000", "ffffffff81000002", "1003"],
    );
  });
});

describe("EventEn in the MSR model", () => {
  test("#GP where CPUID.14H.0:EBX[7] = 0, accepted where it is 1", () => {
    const v = ctl({ ...BRANCHES, TraceEn: 0, EventEn: 1 });
    const without = new MsrFile({ ...presetCapabilities("skylake"), eventTrace: false });
    const fault = without.wrmsr(Msr.Ctl, v.hi, v.lo);
    assert.ok(fault);
    assert.match(JSON.stringify(fault), /EventEn/);
    const withIt = new MsrFile({ ...presetCapabilities("skylake"), eventTrace: true });
    assert.equal(withIt.wrmsr(Msr.Ctl, v.hi, v.lo), null);
  });
});

describe("the if and cr2 records", () => {
  test("round-trip through JSON Lines and the binary form; bad values are refused", () => {
    const text = pageFault();
    const x = readExecJsonl(text);
    assert.equal(writeExecJsonl(readExecJsonl(writeExecJsonl(x))), writeExecJsonl(x));
    assert.equal(writeExecJsonl(readExecBinary(writeExecBinary(x))), writeExecJsonl(x));
    assert.match(writeExecJsonl(x), /"k":"if","if":false/);
    assert.match(writeExecJsonl(x), /"k":"cr2","cr2":"0xdead0"/);
    assert.throws(() => readExecJsonl('{"k":"if","if":2}\n'), /line 1/);
  });
});
