/**
 * Which instructions of an execution a decoder must give back from its trace, from the
 * SDM's definitions rather than from the generator: an instruction is traced when
 * ContextEn and FilterEn hold as it executes (TriggerEn and BranchEn being set).
 *
 * - ContextEn: CPL 0 needs OS, CPL > 0 needs User; with CR3 filtering CR3 must match.
 * - FilterEn: decided where execution lands (§36.2.4.3) after every JMP, CALL (a
 *   zero-length CALL too: it is a taken branch), indirect or far branch, taken
 *   conditional branch and asynchronous event, and at the first instruction;
 *   sequential execution across a range boundary leaves it alone.
 * - TraceStop: landing in a TraceStop range while ContextEn holds ends the trace; a
 *   branch lands where the next instruction or asynchronous event happens.
 *
 * Used by the generator's random-program tests and by the end-to-end tests on real
 * programs (test/unit/e2e).
 */
import { CofiType, cofiType } from "../../../src/isa/types.js";
import { ExecEvent, type Execution, infoClass, infoSize, isFlowEvent } from "../../../src/unit/exec/types.js";

export interface TraceFilter {
  os: boolean;
  user: boolean;
  /** CR3 to match, or undefined without CR3 filtering. */
  cr3?: bigint;
  /** FilterEn ranges and TraceStop ranges, inclusive [from, to]. */
  filters?: readonly [bigint, bigint][];
  stops?: readonly [bigint, bigint][];
}

const ipOf = (x: Execution, i: number) => (BigInt(x.ipHi[i]!) << 32n) | BigInt(x.ipLo[i]!);
const inAny = (v: bigint, ranges: readonly [bigint, bigint][]) => ranges.some(([a, b]) => a <= v && v <= b);

/** The IPs (lower-case hex with 0x) of the traced instructions, in order. */
export function tracedIps(x: Execution, f: TraceFilter): string[] {
  const filters = f.filters ?? [];
  const stops = f.stops ?? [];
  const out: string[] = [];
  let cpl = 0;
  let cr3 = 0n;
  let filterEn = true;
  let landed = true;
  let e = 0;
  const contextEn = () => (cpl === 0 ? f.os : f.user) && (f.cr3 === undefined || f.cr3 === cr3);
  /** Execution lands at `at`; false when a TraceStop ends the trace there. */
  const land = (at: bigint): boolean => {
    if (!contextEn()) return true;
    if (inAny(at, stops)) return false;
    if (filters.length > 0) filterEn = inAny(at, filters);
    return true;
  };
  for (let i = 0; i < x.insnCount; i++) {
    for (; e < x.eventCount && x.evAt[e] === i; e++) {
      const kind = x.evKind[e]!;
      if (kind === ExecEvent.Cpl) cpl = x.evA[e]!;
      else if (kind === ExecEvent.Cr3) cr3 = (BigInt(x.evHi[e]!) << 32n) | BigInt(x.evLo[e]!);
      else if (isFlowEvent(kind) && kind !== ExecEvent.End) {
        // A branch just before lands where the event hits; the event lands at its target.
        if (landed && !land((BigInt(x.evHi[e]!) << 32n) | BigInt(x.evLo[e]!))) return out;
        landed = true;
      }
    }
    const at = ipOf(x, i);
    if (landed && !land(at)) return out;
    if (contextEn() && filterEn) out.push(`0x${at.toString(16)}`);
    const info = x.info[i]!;
    const cofi = cofiType(infoClass(info));
    const next = i + 1 < x.insnCount ? ipOf(x, i + 1) : undefined;
    landed = cofi === CofiType.Conditional ? next !== at + BigInt(infoSize(info)) : cofi !== CofiType.None;
  }
  return out;
}
