/**
 * What `ptkit demo` reports about a run (a run's profile): instructions and calls per function, branch
 * kinds and the deepest call nesting. It is filled one instruction at a time, from a
 * decoded trace (the demo) or from the execution the trace was made of
 * (tools/sample), so that the two can be compared.
 */

import { InsnClass } from "../isa/index.js";
import { SymbolHit } from "./symbol-table.js";
import type { Symbolizer } from "./symbolizer.js";

/** One function's share of the run. */
export interface FunctionCount {
  name: string;
  /** Instructions executed in the function itself (not in its callees). */
  insns: number;
  /** Times it was entered by a call. */
  calls: number;
}

export interface ProfileSummary {
  instructions: number;
  /** Instructions no symbol covers. */
  unnamed: number;
  conditional: number;
  /** Near jumps, direct and indirect. */
  jumps: number;
  /** Near calls, direct and indirect. */
  calls: number;
  returns: number;
  /** Far transfers: system calls, interrupts, far calls, jumps and returns. */
  far: number;
  /** Deepest call nesting, counted from where the run starts. */
  maxDepth: number;
  /** The function running at that depth. */
  deepest: string;
  /** Most instructions first; ties by name. */
  functions: FunctionCount[];
}

export class Profile {
  private readonly hit = new SymbolHit();
  private readonly byName = new Map<string, FunctionCount>();
  private readonly s: ProfileSummary = {
    instructions: 0,
    unnamed: 0,
    conditional: 0,
    jumps: 0,
    calls: 0,
    returns: 0,
    far: 0,
    maxDepth: 0,
    deepest: "",
    functions: [],
  };
  private afterCall = false;
  private depth = 0;

  constructor(private readonly symbols: Symbolizer) {}

  /** One executed instruction at (ipHi:ipLo) of the isa layer's class `iclass`. */
  add(ipHi: number, ipLo: number, iclass: InsnClass): void {
    const s = this.s;
    s.instructions++;
    let fn: FunctionCount | undefined;
    if (this.symbols.lookup(ipHi, ipLo, this.hit)) {
      const name = this.hit.name;
      fn = this.byName.get(name);
      if (fn === undefined) {
        fn = { name, insns: 0, calls: 0 };
        this.byName.set(name, fn);
      }
      fn.insns++;
    } else {
      s.unnamed++;
    }
    if (this.afterCall) {
      if (fn !== undefined) fn.calls++;
      if (this.depth > s.maxDepth) {
        s.maxDepth = this.depth;
        s.deepest = fn?.name ?? "";
      }
    }
    this.afterCall = false;
    switch (iclass) {
      case InsnClass.CondBranch:
        s.conditional++;
        break;
      case InsnClass.Jump:
      case InsnClass.JumpIndirect:
        s.jumps++;
        break;
      case InsnClass.Call:
      case InsnClass.CallIndirect:
        s.calls++;
        this.depth++;
        this.afterCall = true;
        break;
      case InsnClass.Return:
        s.returns++;
        // A return from a function entered before the run began stays at depth 0.
        if (this.depth > 0) this.depth--;
        break;
      case InsnClass.FarCall:
      case InsnClass.FarJump:
      case InsnClass.FarReturn:
      case InsnClass.Interrupt:
      case InsnClass.Iret:
      case InsnClass.Syscall:
      case InsnClass.Sysret:
      case InsnClass.VmEntry:
      case InsnClass.VmExit:
        s.far++;
        break;
    }
  }

  summary(): ProfileSummary {
    const functions = [...this.byName.values()]
      .map((f) => ({ ...f }))
      .sort((a, b) => b.insns - a.insns || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { ...this.s, functions };
  }
}
