/**
 * `--check`: ptxed decodes every instruction again with its own disassembler and
 * reports where the flow decoder's view disagrees (bad section id, undecodable bytes,
 * a block that does not end where it says, an instruction class that does not match).
 * ptkit decodes again with the isa layer and compares its finer classes with the flow
 * decoder's libipt-style class, accepting what ptxed accepts for each instruction.
 */
import { type Block, FlowClass, type Insn } from "../flow/index.js";
import type { Image } from "../image/index.js";
import { INSN_CLASS_NAMES, InsnClass } from "../isa/index.js";
import { ErrorCode, errorMessage, hex64 } from "../packet/index.js";
import type { CodeWalker } from "./flow-walk.js";

/** ptxed's names for the flow classes (its `visualize_iclass`). */
const FLOW_CLASS_TEXT = [
  "unknown",
  "other",
  "near call",
  "near return",
  "near jump",
  "cond jump",
  "far call",
  "far return",
  "far jump",
  "ptwrite",
  "indirect",
];

const F = FlowClass;
const bit = (c: number) => 1 << c;
/**
 * An indirect branch may be reported as "indirect" by a block that did not decode it
 * (libipt's blocks from its block cache; ptkit's report the instruction's class).
 */
const OR_INDIRECT = bit(F.Indirect);

/**
 * The flow classes ptxed accepts for each isa class (as bits), following its table of
 * XED classes. The 0F 01 group (VMCALL, VMLAUNCH, UIRET, ERETS, ... next to AMD's and
 * TDX's instructions of the same isa class) is told apart only by its bytes, so any
 * libipt class it may have is accepted.
 */
const ACCEPTED: readonly number[] = (() => {
  const farGroup = bit(F.Other) | bit(F.FarCall) | bit(F.FarReturn) | OR_INDIRECT;
  const table: number[] = new Array(INSN_CLASS_NAMES.length).fill(bit(F.Other));
  table[InsnClass.CondBranch] = bit(F.CondJump);
  table[InsnClass.Jump] = bit(F.Jump) | OR_INDIRECT;
  table[InsnClass.JumpIndirect] = bit(F.Jump) | OR_INDIRECT;
  table[InsnClass.Call] = bit(F.Call) | OR_INDIRECT;
  table[InsnClass.CallIndirect] = bit(F.Call) | OR_INDIRECT;
  table[InsnClass.Return] = bit(F.Return) | OR_INDIRECT;
  table[InsnClass.FarCall] = bit(F.FarCall) | OR_INDIRECT;
  table[InsnClass.Interrupt] = bit(F.FarCall) | OR_INDIRECT;
  table[InsnClass.Syscall] = bit(F.FarCall) | OR_INDIRECT;
  table[InsnClass.FarReturn] = bit(F.FarReturn) | OR_INDIRECT;
  table[InsnClass.Iret] = bit(F.FarReturn) | OR_INDIRECT;
  table[InsnClass.Sysret] = bit(F.FarReturn) | OR_INDIRECT;
  table[InsnClass.FarJump] = bit(F.FarJump) | OR_INDIRECT;
  table[InsnClass.PtWrite] = bit(F.Ptwrite);
  table[InsnClass.VmEntry] = farGroup;
  table[InsnClass.VmExit] = farGroup;
  table[InsnClass.FarOther] = farGroup;
  return table;
})();

function at(offset: number, ipHi: number, ipLo: number): string {
  return `[${offset.toString(16)}, ${hex64(ipHi, ipLo, 1)}`;
}

/** The class comparison for the instruction `walker` decoded last, or undefined when they agree. */
function classError(walker: CodeWalker, flowClass: number, offset: number, ipHi: number, ipLo: number) {
  const isaClass = walker.info.iclass;
  if ((ACCEPTED[isaClass]! >>> flowClass) & 1) return undefined;
  const ours = FLOW_CLASS_TEXT[flowClass] ?? "undefined";
  return `${at(offset, ipHi, ipLo)}: iclass error: iclass: ${ours}, isa iclass: ${INSN_CLASS_NAMES[isaClass]}]`;
}

function decodeError(offset: number, ipHi: number, ipLo: number): string {
  return `${at(offset, ipHi, ipLo)}: decode error: ${errorMessage(ErrorCode.BadInsn)}]`;
}

/** ptxed's checks of one instruction from the instruction flow decoder. */
export function checkInsn(walker: CodeWalker, insn: Insn, offset: number, report: (line: string) => void) {
  if (insn.isid <= 0) report(`${at(offset, insn.ipHi, insn.ipLo)}: check error: bad isid]`);
  if (walker.fetchRaw(insn.raw, insn.size) < 0 || walker.decode(insn.ipHi, insn.ipLo, insn.mode) < 0) {
    report(decodeError(offset, insn.ipHi, insn.ipLo));
    return;
  }
  const err = classError(walker, insn.iclass, offset, insn.ipHi, insn.ipLo);
  if (err) report(err);
}

/** ptxed's checks of one block: every instruction decodes and the walk ends at endIp. */
export function checkBlock(
  walker: CodeWalker,
  block: Block,
  image: Image,
  offset: number,
  report: (line: string) => void,
) {
  if (block.ninsn === 0) return;
  if (block.isid <= 0) report(`${at(offset, block.ipHi, block.ipLo)}: check error: bad isid]`);
  let hi = block.ipHi;
  let lo = block.ipLo;
  let lastHi = hi;
  let lastLo = lo;
  for (let n = block.ninsn; n > 0; n--) {
    const err = walker.fetchInBlock(block, image, hi, lo);
    if (err < 0) {
      report(`${at(offset, hi, lo)}: fetch error: ${errorMessage(err)}]`);
      return;
    }
    if (walker.decode(hi, lo, block.mode) < 0) {
      report(decodeError(offset, hi, lo));
      return;
    }
    lastHi = hi;
    lastLo = lo;
    hi = walker.next.hi;
    lo = walker.next.lo;
  }
  if (lastHi !== block.endIpHi || lastLo !== block.endIpLo)
    report(
      `${at(offset, lastHi, lastLo)}: error: did not reach end: ${hex64(block.endIpHi, block.endIpLo, 1)}]`,
    );
  if (block.iclass !== FlowClass.Unknown) {
    const err = classError(walker, block.iclass, offset, lastHi, lastLo);
    if (err) report(err);
  }
}
