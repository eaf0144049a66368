/**
 * Hand-written executions for the Event Trace events besides interrupts, exceptions,
 * IRET and VM exits/entries, with the code bytes at their addresses (real
 * instructions of the sizes the executions give), shared by the generator's exact
 * packet tests and its libipt test.
 */
import { Image } from "../../../src/image/index.js";
import { BRANCHES, insn, jsonl } from "./helpers.js";

export const caps = { eventTrace: true };
export const ET = { ...BRANCHES, EventEn: 1 };
export const NO_BRANCHES = { ...ET, BranchEn: 0 };
export const KERNEL = "0xffffffff81000000";

/** User code with `int 0x80` (or int3) at 0x1001 into a handler: nop; iretq; back to 0x1003. */
export function softInt(size: number, vector: number | undefined): string {
  return jsonl(
    { k: "cpl", cpl: 3 },
    insn(0x1000, 1),
    insn(0x1001, size, "interrupt"),
    ...(vector === undefined ? [] : [{ k: "swint", vector }]),
    { k: "cpl", cpl: 0 },
    insn(KERNEL, 2),
    insn("0xffffffff81000002", 2, "iret"),
    { k: "cpl", cpl: 3 },
    insn(0x1001 + size, 1),
    { k: "end", ip: `0x${(0x1002 + size).toString(16)}` },
  );
}

/** nop at 0x1000; an SMI before 0x1001 into SMM code (nop; rsm) at 0x38000; back to the nop at 0x1001. */
export const SMI = jsonl(
  { k: "cpl", cpl: 3 },
  insn(0x1000, 1),
  { k: "smi", from: "0x1001", to: "0x38000" },
  { k: "cpl", cpl: 0 },
  insn("0x38000", 1),
  insn("0x38001", 2, "far-other"),
  { k: "rsm" },
  { k: "cpl", cpl: 3 },
  insn(0x1001, 1),
  { k: "end", ip: "0x1002" },
);

/** nop at 0x1000; INIT before 0x1001; SIPI 0xce: the nop at 0xce000 in real mode with IF=0. */
export const INIT = jsonl(
  insn(0x1000, 1),
  { k: "init", from: "0x1001" },
  { k: "sipi", vector: 0xce },
  { k: "mode", mode: 16 },
  { k: "if", if: false },
  insn("0xce000", 1),
  { k: "end", ip: "0xce001" },
);

/** nop at 0x1000; user interrupt 4 before 0x1001 into the handler at 0x2000 (nop; uiret); back to 0x1001. */
export const UINTR = jsonl(
  { k: "cpl", cpl: 3 },
  insn(0x1000, 1),
  { k: "uintr", vector: 4, from: "0x1001", to: "0x2000" },
  insn(0x2000, 1),
  insn(0x2001, 4, "far-other"),
  { k: "uiret" },
  insn(0x1001, 1),
  { k: "end", ip: "0x1002" },
);

/** A guest nop at 0x1000, an EPT violation (reason 48, qualification 0x181) before 0x1001 into the VMM's nop. */
export function vmExit(qual: boolean): string {
  return jsonl(
    insn(0x1000, 1),
    { k: "vmexit", reason: 48, from: "0x1001", to: KERNEL },
    ...(qual ? [{ k: "exit-qual", qual: "0x181" }] : []),
    insn(KERNEL, 1),
    { k: "end", ip: "0xffffffff81000001" },
  );
}

export const NOP = 0x90;
export function image(regions: [number, number, number[]][]): Image {
  const im = new Image();
  regions.forEach(([hi, lo, bytes], n) => {
    im.addRaw(`r${n}`, Uint8Array.from(bytes), hi, lo);
  });
  return im;
}
