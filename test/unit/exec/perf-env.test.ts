/**
 * applyPerfEnv (src/unit/exec/perf-env.ts) on a small execution: where the page
 * faults and TraceEn toggles go, and that the result is a valid execution that
 * round-trips through JSON Lines.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { InsnClass } from "../../../src/isa/types.js";
import { readExecJsonl, writeExecJsonl } from "../../../src/unit/exec/jsonl.js";
import { applyPerfEnv } from "../../../src/unit/exec/perf-env.js";
import { ExecBuilder } from "../../../src/unit/exec/types.js";

/** User code on pages 0x400000 and 0x401000 (one instruction straddling into 0x402000), a syscall, exit. */
function program() {
  const b = new ExecBuilder().cpl(3).cr3(0, 0x1000);
  b.insn(0, 0x400ffe, 2, InsnClass.Other);
  b.insn(0, 0x401000, 2, InsnClass.Syscall).cpl(0);
  b.insn(0xffffffff, 0x81000000, 3, InsnClass.Sysret).cpl(3);
  b.insn(0, 0x401002, 5, InsnClass.Other);
  b.insn(0, 0x400ff0, 4, InsnClass.Other); // page 0x400000 again: no fault
  b.insn(0, 0x401ffe, 4, InsnClass.Other); // ends on page 0x402000: one more fault
  b.insn(0, 0x402002, 2, InsnClass.Syscall).cpl(0);
  b.end(0xffffffff, 0x81000000);
  return b.build();
}

/** The records as JSON Lines, one string each. */
function lines(x: ReturnType<typeof program>): string[] {
  return writeExecJsonl(x).trim().split("\n");
}

describe("applyPerfEnv", () => {
  test("a fault at the first fetch from each page, exec's kernel first, one toggle at the end", () => {
    const r = applyPerfEnv(program(), { ctlHi: 0, ctlLo: 0x2009, execTicks: 10 });
    assert.deepEqual(r.faults, [
      [0, 0x400000],
      [1, 0x401000],
      [5, 0x402000],
    ]);
    assert.equal(r.toggles, 1);
    const l = lines(r.execution);
    assert.deepEqual(l.slice(0, 6), [
      '{"k":"cr3","cr3":"0x1000"}',
      '{"k":"cpl","cpl":0}',
      '{"k":"ticks","n":"0xa"}',
      '{"k":"insn","ip":"0xffffffff81000010","size":2,"class":"iret"}',
      '{"k":"cpl","cpl":3}',
      '{"k":"exception","vector":14,"from":"0x400ffe","to":"0xffffffff81000010"}',
    ]);
    // The toggle: TraceEn cleared, then the configured value again, before the end.
    assert.deepEqual(l.slice(-3), [
      '{"k":"wrmsr","msr":1392,"value":"0x2008"}',
      '{"k":"wrmsr","msr":1392,"value":"0x2009"}',
      '{"k":"end","ip":"0xffffffff81000000"}',
    ]);
    assert.deepEqual(lines(readExecJsonl(new TextEncoder().encode(writeExecJsonl(r.execution)))), l);
  });

  test("toggleEveryVisit: a toggle before every kernel instruction; presentPages and codeFaults", () => {
    const r = applyPerfEnv(program(), {
      ctlHi: 0,
      ctlLo: 0x2009,
      toggleEveryVisit: true,
      togglesAtEnd: 0,
      presentPages: [0x401],
    });
    // exec's kernel, the faults on 0x400000 and 0x402000, the syscall.
    assert.equal(r.toggles, 4);
    assert.deepEqual(
      r.faults.map(([, page]) => page),
      [0x400000, 0x402000],
    );
    assert.equal(applyPerfEnv(program(), { ctlHi: 0, ctlLo: 0x2009, codeFaults: false }).faults.length, 0);
  });
});
