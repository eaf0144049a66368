/**
 * The stand-in kernel of executions converted from valgrind logs.
 *
 * Valgrind runs only user code: a system call or a signal shows up as user code
 * continuing somewhere. For an Intel PT trace the kernel has to be there (CPL 0, OS
 * filtering, far transfers in and out), so each kernel visit becomes one kernel
 * instruction at a fixed kernel address that returns to where user code goes on:
 *
 * | address                   | bytes      | instruction | used for |
 * |---------------------------|------------|-------------|----------|
 * | `0xffffffff81000000`      | `48 0f 07` | SYSRETQ     | a system call that returns to the instruction after it |
 * | `0xffffffff81000010`      | `48 cf`    | IRETQ       | every other way back: signal delivery, sigreturn, after an exception or interrupt |
 *
 * Decoders need these bytes like any other code: {@link KERNEL_CODE} is the page to map
 * at {@link KERNEL_BASE_HI}:{@link KERNEL_BASE_LO} (it is int3 padding elsewhere).
 */
import { InsnClass } from "../../isa/types.js";

/** 0xffffffff81000000, where Linux x86-64 kernels put their text. */
export const KERNEL_BASE_HI = 0xffffffff;
export const KERNEL_BASE_LO = 0x81000000;

/** Offsets and sizes of the two kernel instructions. */
export const SYSRET_OFFSET = 0x00;
export const SYSRET_SIZE = 3;
export const IRET_OFFSET = 0x10;
export const IRET_SIZE = 2;

export const SYSRET_CLASS = InsnClass.Sysret;
export const IRET_CLASS = InsnClass.Iret;

/** The kernel's code bytes, to be mapped at the kernel base. */
export const KERNEL_CODE: Uint8Array = (() => {
  const page = new Uint8Array(0x20).fill(0xcc);
  page.set([0x48, 0x0f, 0x07], SYSRET_OFFSET);
  page.set([0x48, 0xcf], IRET_OFFSET);
  return page;
})();
