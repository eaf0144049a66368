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

  test("segments: fault-around in file mappings, data faults on first loads and stores, nothing outside", () => {
    const b = new ExecBuilder().cpl(3).cr3(0, 0x1000);
    const at = [
      0x401000, 0x410ff0, 0x411000, 0x411004, 0x411008, 0x41100c, 0x411010, 0x411014, 0x411018, 0x41101c,
    ];
    for (const ip of at) b.insn(0, ip, 4, InsnClass.Other);
    b.insn(0, 0x411020, 2, InsnClass.Syscall).cpl(0);
    b.end(0xffffffff, 0x81000000);
    const segments = [
      { start: 0x400000, fileEnd: 0x400518, end: 0x400518 }, // headers, read-only
      { start: 0x401000, fileEnd: 0x487fb1, end: 0x487fb1 }, // text
      { start: 0x4b0928, fileEnd: 0x4b62f0, end: 0x4b7bc0 }, // data and .bss
    ];
    // Instruction k's first touches: [insn, page, write].
    const touches: [number, number, number][] = [
      [3, 0x4b5, 0], // a read fault: maps 0x4b0-0x4b5 read-only (0x4b6 is present: exec zeroed its .bss part)
      [4, 0x4b3, 1], // a store to a page fault-around mapped: copy on write, a fault
      [5, 0x4b2, 0], // mapped: no fault
      [5, 0x4b6, 1], // present and written by exec: no fault
      [6, 0x4b7, 0], // .bss (anonymous): the zero page, a fault
      [7, 0x4b7, 1], // and a store to it, another
      [8, 0x400, 0], // the headers' page: its own mapping, not mapped by the text's faults
      [9, 0x1fff000, 1], // the stack: not a segment, no fault
    ];
    const dataTouches = {
      insn: touches.map((t) => t[0]),
      page: touches.map((t) => t[1]),
      write: touches.map((t) => t[2]),
    };
    const r = applyPerfEnv(b.build(), { ctlHi: 0, ctlLo: 0x2009, segments, dataTouches });
    assert.deepEqual(r.faults, [
      [0, 0x401000], // maps 0x401000-0x410fff (16 pages from the mapping's start)
      [2, 0x411000], // maps 0x410000-0x41ffff
      [3, 0x4b5000],
      [4, 0x4b3000],
      [6, 0x4b7000],
      [7, 0x4b7000],
      [8, 0x400000],
    ]);
    assert.equal(r.dataFaults, 5);
    // Each fault: FUP at the instruction, which then retires after the kernel's IRETQ.
    const l = lines(r.execution);
    const k = l.indexOf('{"k":"exception","vector":14,"from":"0x411008","to":"0xffffffff81000010"}');
    assert.deepEqual(l.slice(k + 1, k + 5), [
      '{"k":"cpl","cpl":0}',
      '{"k":"ticks","n":"0x7d0"}', // the kernel's time: kernelTicks, 2,000 by default
      '{"k":"insn","ip":"0xffffffff81000010","size":2,"class":"iret"}',
      '{"k":"cpl","cpl":3}',
    ]);
    // Without fault-around every page faults; without segments data touches are ignored.
    const none = applyPerfEnv(b.build(), {
      ctlHi: 0,
      ctlLo: 0x2009,
      segments,
      dataTouches,
      faultAroundPages: 1,
    });
    assert.deepEqual(
      none.faults.map(([, page]) => page),
      [0x401000, 0x410000, 0x411000, 0x4b5000, 0x4b3000, 0x4b2000, 0x4b7000, 0x4b7000, 0x400000],
    );
    const code = applyPerfEnv(b.build(), { ctlHi: 0, ctlLo: 0x2009, dataTouches });
    assert.deepEqual(code.faults, [
      [0, 0x401000],
      [1, 0x410000],
      [2, 0x411000],
    ]);
  });
});
