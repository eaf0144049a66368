/**
 * A small program and its trace, made in Node: x86-64 code assembled into an ELF
 * executable, its execution written as JSON Lines, and the trace the trace unit's
 * packet generator writes for it (user-mode branch tracing with TSC packets).
 *
 * The program: `main` calls `work` in a loop of `iterations` rounds; `work` skips one
 * instruction on every third round. Calls, returns (compressed), conditional branches
 * taken and not taken.
 */

import { ET_EXEC, PF_R, PF_X, PT_LOAD, writeElf } from "../../tools/elf/elf-writer.js";
import { Asm } from "../flow/asm.js";
import { BRANCHES, genBytes, jsonl } from "../unit/gen/helpers.js";

export interface TracedProgram {
  elf: Uint8Array;
  trace: Uint8Array;
}

export function tracedProgram(iterations: number): TracedProgram {
  const base = 0x401000n;
  const asm = new Asm(base);
  asm.label("main").call("work").add().jz("main").hlt();
  asm.label("work").nop().load().jz("skip").add().label("skip").ret();
  const code = asm.build();
  const [call, add1, loop, hlt, nop, load, skip, add2, ret] = asm.starts as [bigint, ...bigint[]];
  const size = (ip: bigint): number => {
    const i = asm.starts.indexOf(ip);
    return Number((asm.starts[i + 1] ?? asm.here) - ip);
  };

  const records: object[] = [{ k: "cpl", cpl: 3 }];
  const insn = (ip: bigint | undefined, cls = "other"): void => {
    records.push({ k: "insn", ip: `0x${ip!.toString(16)}`, size: size(ip!), class: cls });
  };
  for (let i = 0; i < iterations; i++) {
    insn(call, "call");
    insn(nop);
    insn(load);
    insn(skip, "cond-branch");
    if (i % 3 !== 0) insn(add2);
    insn(ret, "return");
    insn(add1);
    insn(loop, "cond-branch");
  }
  records.push({ k: "end", ip: `0x${hlt!.toString(16)}` });

  const trace = genBytes(jsonl(...records), { ctl: { ...BRANCHES, TSCEn: 1 } });
  const elf = writeElf({
    is64: true,
    le: true,
    type: ET_EXEC,
    entry: base,
    segments: [{ type: PT_LOAD, flags: PF_R | PF_X, vaddr: base, data: code, align: 0x1000n }],
  }).bytes;
  return { elf, trace };
}
