/**
 * PacketEn = TriggerEn ∧ ContextEn ∧ FilterEn ∧ BranchEn and its transitions: the
 * cases of SDM Table 36-50 ("Packet Generation under Different Enable Conditions"),
 * with the executions written by hand and the exact packets expected.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { readExecJsonl } from "../../../src/unit/exec/jsonl.js";
import { generate } from "../../../src/unit/gen/index.js";
import { Msr, STATUS } from "../../../src/unit/msr-layout.js";
import { afterPsb, BRANCHES, ctl, gen, insn, jsonl, msrs, packetList } from "./helpers.js";

const USER = { ctl: { ...BRANCHES, OS: 0 } };
const KERNEL_IP = "0xffffffff81000000";

describe("enabling and disabling with TraceEn", () => {
  test("TraceEn 0 -> 1 with PacketByteCnt = 0: TIP.PGE(NLIP), then PSB+ with every status packet (case 2e)", () => {
    const x = jsonl({ k: "cr3", cr3: "0x1234000" }, insn(0x1000, 1), insn(0x1001, 1));
    const p = gen(x, { ctl: { ...BRANCHES, TSCEn: 1, MTCEn: 1 } });
    assert.deepEqual(p, [
      "mode.exec 64",
      "tip.pge 0x1000",
      "psb",
      "tsc 0x1000000000",
      "tma 61280 64",
      "cbr 37",
      "pip 0x1234000",
      "mode.tsx commit",
      "mode.exec 64",
      "fup 0x1000",
      "psbend",
      // The end of the execution: software clears TraceEn (case 3b).
      "fup 0x1002",
      "tip.pgd -",
    ]);
  });

  test("TraceEn 0 -> 1 with PacketByteCnt > 0: TSC, TMA, CBR, MODE.Exec, TIP.PGE and no PSB (case 2d)", () => {
    const count = 100n << BigInt(STATUS.PacketByteCnt.lsb);
    const p = gen(jsonl(insn(0x1000, 1)), { ctl: { ...BRANCHES, TSCEn: 1, MTCEn: 1 }, status: count });
    assert.deepEqual(p, [
      "tsc 0x1000000000",
      "tma 61280 64",
      "cbr 37",
      "mode.exec 64",
      "tip.pge 0x1000",
      "fup 0x1001",
      "tip.pgd -",
    ]);
  });

  test("TraceEn 0 -> 1 while not in context: PSB+ without FUP or MODE.Exec (case 2b)", () => {
    const p = gen(jsonl({ k: "cpl", cpl: 0 }, insn(0x1000, 1)), USER);
    assert.deepEqual(p, ["psb", "cbr 37", "psbend"]);
  });

  test("a WRMSR that clears TraceEn: FUP(CLIP), TIP.PGD(); one that sets it again: timing packets, TIP.PGE", () => {
    const off = ctl({ ...BRANCHES, TraceEn: 0 });
    const on = ctl(BRANCHES);
    const x = jsonl(
      insn(0x1000, 2, "jump-indirect"),
      { k: "wrmsr", msr: Msr.Ctl, value: `0x${off.lo.toString(16)}` },
      insn(0x2000, 1),
      { k: "wrmsr", msr: Msr.Ctl, value: `0x${on.lo.toString(16)}` },
      insn(0x3000, 1),
    );
    assert.deepEqual(afterPsb(gen(x, { ctl: BRANCHES })), [
      "tip 0x2000",
      "fup 0x2000",
      "tip.pgd -",
      // PacketByteCnt is not 0 now: no PSB (case 2d).
      "cbr 37",
      "tip.pge 0x3000",
      "fup 0x3001",
      "tip.pgd -",
    ]);
  });

  test("a WRMSR that faults changes nothing and is reported with its record index", () => {
    const exec = readExecJsonl(
      jsonl(insn(0x1000, 1), { k: "wrmsr", msr: Msr.Ctl, value: "0x1" }, insn(0x1001, 1)),
    );
    const res = generate(exec, { msrs: msrs({ ctl: BRANCHES }), cyclesPerInsn: 0 });
    assert.equal(res.faults.length, 1);
    assert.equal(res.faults[0]!.record, 1);
    assert.equal(res.faults[0]!.fault.msr, "IA32_RTIT_CTL");
  });

  test("disableAtEnd: false leaves tracing on and the last TNT bits in the processor", () => {
    const x = jsonl(insn(0x1000, 2, "cond-branch"), insn(0x1002, 1));
    assert.deepEqual(afterPsb(gen(x, { ctl: BRANCHES }, { disableAtEnd: false })), []);
    assert.deepEqual(afterPsb(gen(x, { ctl: BRANCHES })), ["tnt N", "fup 0x1003", "tip.pgd -"]);
  });
});

describe("ContextEn: CPL and CR3 filtering", () => {
  test("user-only: SYSCALL disables with TIP.PGD() (IP hidden), SYSRET enables at its target (cases 10c, 10b)", () => {
    const x = jsonl(
      { k: "cpl", cpl: 3 },
      insn(0x401000, 2, "syscall"),
      { k: "cpl", cpl: 0 },
      insn(KERNEL_IP, 3, "sysret"),
      { k: "cpl", cpl: 3 },
      insn(0x401002, 1),
    );
    // No MODE.Exec with the TIP.PGE: the mode is that of the last MODE.Exec (SDM, Table 36-26).
    assert.deepEqual(afterPsb(gen(x, USER)), ["tip.pgd -", "tip.pge 0x401002", "fup 0x401003", "tip.pgd -"]);
  });

  test("user-only: an interrupt gives FUP(NLIP), TIP.PGD(); IRET enables again (cases 11c, 10b)", () => {
    const x = jsonl(
      { k: "cpl", cpl: 3 },
      insn(0x401000, 1),
      { k: "interrupt", vector: 32, from: "0x401001", to: "0xffffffff81000010" },
      { k: "cpl", cpl: 0 },
      insn("0xffffffff81000010", 2, "iret"),
      { k: "cpl", cpl: 3 },
      insn(0x401001, 1),
    );
    assert.deepEqual(afterPsb(gen(x, USER)), [
      "fup 0x401001",
      "tip.pgd -",
      "tip.pge 0x401001",
      "fup 0x401002",
      "tip.pgd -",
    ]);
  });

  test("kernel and user: an exception gives FUP(faulting IP), TIP(handler) (case 13e)", () => {
    const x = jsonl(
      { k: "cpl", cpl: 3 },
      insn(0x401000, 1),
      { k: "exception", vector: 14, from: "0x401001", to: "0xffffffff81000020" },
      { k: "cpl", cpl: 0 },
      insn("0xffffffff81000020", 2, "iret"),
      { k: "cpl", cpl: 3 },
      insn(0x401001, 1),
    );
    assert.deepEqual(afterPsb(gen(x, { ctl: BRANCHES })), [
      "fup 0x401001",
      "tip 0xffffffff81000020",
      "tip 0x401001",
      "fup 0x401002",
      "tip.pgd -",
    ]);
  });

  test("INT n is not inferable from the code: FUP(CLIP) then TIP (case 12e)", () => {
    const x = jsonl(insn(0x1000, 2, "interrupt"), insn("0xffffffff81000010", 2, "iret"), insn(0x1002, 1));
    assert.deepEqual(afterPsb(gen(x, { ctl: BRANCHES })), [
      "fup 0x1000",
      "tip 0xffffffff81000010",
      "tip 0x1002",
      "fup 0x1003",
      "tip.pgd -",
    ]);
  });

  test("MOV CR3 gives PIP (OS=1); with a CR3 filter, leaving the CR3 gives TIP.PGD(), entering PIP, TIP.PGE(NLIP) (case 5)", () => {
    const setup = { ctl: { ...BRANCHES, CR3Filter: 1 }, cr3Match: 0x5000n };
    const x = jsonl(
      { k: "cr3", cr3: "0x5000" },
      insn(0xffff8000, 3, "mov-cr3"),
      { k: "cr3", cr3: "0x6000" },
      insn(0xffff8003, 3, "mov-cr3"),
      { k: "cr3", cr3: "0x5000" },
      insn(0xffff8006, 1),
    );
    assert.deepEqual(afterPsb(gen(x, setup)), [
      "tip.pgd -",
      "pip 0x5000",
      "tip.pge 0xffff8006",
      "fup 0xffff8007",
      "tip.pgd -",
    ]);
    const plain = jsonl(insn(0x1000, 3, "mov-cr3"), { k: "cr3", cr3: "0x7000" }, insn(0x1003, 1));
    assert.deepEqual(afterPsb(gen(plain, { ctl: BRANCHES })), ["pip 0x7000", "fup 0x1004", "tip.pgd -"]);
    assert.deepEqual(afterPsb(gen(plain, USER)).includes("pip 0x7000"), false, "no PIP without OS=1");
  });

  test("a far transfer that changes CR3 and mode: PIP and MODE.Exec between FUP and TIP (case 11e, Table 36-15)", () => {
    const x = jsonl(
      insn(0x1000, 1),
      { k: "interrupt", vector: 32, from: "0x1001", to: "0x8000" },
      { k: "cr3", cr3: "0x9000" },
      { k: "mode", mode: 32 },
      insn(0x8000, 1),
    );
    assert.deepEqual(afterPsb(gen(x, { ctl: BRANCHES })), [
      "fup 0x1001",
      "pip 0x9000",
      "mode.exec 32",
      "tip 0x8000",
      "fup 0x8001",
      "tip.pgd -",
    ]);
  });

  test("VM entry and exit: PIP with NR, VMCS where the pointer changes", () => {
    const x = jsonl(
      { k: "vmcs", vmcs: "0x12345000" },
      insn(0x1000, 3, "vm-entry"),
      { k: "nonroot", nr: true },
      { k: "cr3", cr3: "0x2000" },
      insn(0x4000, 1),
      { k: "vmexit", reason: 1, from: "0x4001", to: "0x1003" },
      { k: "nonroot", nr: false },
      { k: "cr3", cr3: "0x0" },
      { k: "vmcs", vmcs: "0x23456000" },
      insn(0x1003, 1),
    );
    const p = gen(x, { ctl: BRANCHES });
    assert.ok(p.includes("vmcs 0x12345000"), "PSB+ holds the VMCS pointer");
    assert.deepEqual(afterPsb(p), [
      "pip 0x2000 nr",
      "tip 0x4000",
      "fup 0x4001",
      "pip 0x0",
      "vmcs 0x23456000",
      "tip 0x1003",
      "fup 0x1004",
      "tip.pgd -",
    ]);
  });
});

describe("FilterEn: IP ranges", () => {
  const range = { ctl: { ...BRANCHES, ADDR0_CFG: 1 }, ranges: [[0x2000n, 0x2fffn]] as [bigint, bigint][] };

  test("outside the range at enable: no TIP.PGE; a branch into it enables, one out of it disables with the target", () => {
    const x = jsonl(
      insn(0x1000, 2, "jump"),
      insn(0x2000, 2, "cond-branch"),
      insn(0x2002, 2, "cond-branch"),
      insn(0x2010, 2, "jump-indirect"),
      insn(0x3000, 2, "jump"),
      insn(0x2100, 2, "call-indirect"),
      insn(0x1100, 1),
    );
    assert.deepEqual(gen(x, range), [
      "psb",
      "cbr 37",
      "pip 0x0",
      "mode.tsx commit",
      "psbend",
      "mode.exec 64",
      "tip.pge 0x2000",
      "tnt NT",
      "tip.pgd 0x3000",
      "tip.pge 0x2100",
      "tip.pgd 0x1100",
    ]);
  });

  test("sequential execution across the range boundary changes nothing; a taken Jcc out of it disables", () => {
    // Outside at enable, falling through into the range: still not traced.
    const x = jsonl(insn(0x1ffe, 2), insn(0x2000, 2, "cond-branch"), insn(0x2002, 1));
    assert.deepEqual(afterPsb(gen(x, range)), []);
    // Inside at enable, falling through out of the range: still traced, until a branch lands outside.
    const y = jsonl(
      insn(0x2000, 2, "cond-branch"),
      insn(0x2ffe, 2),
      insn(0x3000, 2, "cond-branch"),
      insn(0x1000, 1),
    );
    assert.deepEqual(afterPsb(gen(y, range)), ["tnt T", "tip.pgd 0x1000"]);
  });

  test("a branch out of the range disables with its target even where straight-line code already ran there (cases 6, 9c)", () => {
    // The range is one instruction; the code runs on out of it and branches back to an
    // instruction it just ran (or to itself). FilterEn changes only where a branch lands,
    // so every instruction up to the branch is traced and the TIP.PGD holds the target
    // (what test/flow/filter-regress.test.ts decodes; seeds 98..807 of libipt.test.ts).
    const one = { ...range, ranges: [[0x2000n, 0x2000n]] as [bigint, bigint][] };
    const ret = jsonl(insn(0x2000, 1), insn(0x2001, 3), insn(0x2004, 1, "return"), insn(0x2001, 3));
    assert.deepEqual(afterPsb(gen(ret, one)), ["tip.pgd 0x2001"]);
    const self = jsonl(insn(0x2000, 1), insn(0x2001, 2, "jump-indirect"), insn(0x2001, 2, "jump-indirect"));
    assert.deepEqual(afterPsb(gen(self, one)), ["tip.pgd 0x2001"]);
    const direct = jsonl(insn(0x2000, 1), insn(0x2001, 3), insn(0x2004, 2, "jump"), insn(0x2001, 3));
    assert.deepEqual(afterPsb(gen(direct, one)), ["tip.pgd 0x2001"]);
  });
});

describe("TraceStop", () => {
  test("a branch into a TraceStop range: TIP.PGD(target), TraceStop, then nothing; STATUS.Stopped is set", () => {
    const x = jsonl(insn(0x1000, 2, "jump"), insn(0x8000, 2, "cond-branch"), insn(0x9000, 1));
    const m = msrs({
      ctl: { ...BRANCHES, ADDR1_CFG: 2 },
      ranges: [
        [0n, 0n],
        [0x8000n, 0x8fffn],
      ],
    });
    const res = generate(readExecJsonl(x), { msrs: m, cyclesPerInsn: 0 });
    assert.deepEqual(afterPsb(packetList(res.bytes)), ["tip.pgd 0x8000", "stop"]);
    const status = m.statusLo;
    assert.equal((status >>> STATUS.Stopped.lsb) & 1, 1);
    assert.equal((status >>> STATUS.TriggerEn.lsb) & 1, 0);
  });
});

describe("BranchEn = 0", () => {
  test("no TNT, TIP, TIP.PGE/PGD or MODE; PSB+ without FUP; PTW still goes out", () => {
    const x = jsonl(
      insn(0x1000, 2, "cond-branch"),
      insn(0x1010, 2, "jump-indirect"),
      insn(0x2000, 5, "ptwrite"),
      { k: "ptw", value: "0x7", bytes: 4 },
      insn(0x2005, 1),
    );
    const p = gen(x, { ctl: { ...BRANCHES, BranchEn: 0, PTWEn: 1 }, caps: { ptwrite: true } });
    assert.deepEqual(p, ["psb", "cbr 37", "pip 0x0", "psbend", "ptw 0x7/4"]);
  });
});
