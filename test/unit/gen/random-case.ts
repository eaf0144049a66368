/**
 * The random trace-unit configurations of the generator's end-to-end tests: one per
 * seed, over a random program of a given size (random-program.ts), with the filter
 * the oracle (oracle.ts) needs to tell which instructions are traced. Shared by
 * libipt.test.ts and the flow decoders' regression tests (test/flow/filter-regress.test.ts),
 * which replay seeds of it.
 */
import { rng } from "../output/helpers.js";
import type { CtlFields } from "./helpers.js";
import type { TraceFilter } from "./oracle.js";
import { CR3, USER_BASE } from "./random-program.js";

export interface Case {
  ctl: CtlFields;
  ranges: [bigint, bigint][];
  filter: TraceFilter;
  cr3Match?: bigint;
  cyclesPerInsn: number;
  longTnt: boolean;
  internalBuffer?: { bytes: number; drainPerCycle: number };
}

/** A random configuration over a program of `size` code bytes. */
export function randomCase(seed: number, size: number): Case {
  const r = rng(seed * 7919 + 1);
  const which = Math.floor(r() * 3);
  const os = which !== 1;
  const user = which !== 2;
  const ctl: CtlFields = {
    TraceEn: 1,
    BranchEn: 1,
    ToPA: 1,
    OS: os,
    User: user,
    DisRETC: r() < 0.3,
    PSBFreq: Math.floor(r() * 2),
    TSCEn: r() < 0.5,
    MTCEn: r() < 0.5,
    MTCFreq: [0, 3, 6, 9][Math.floor(r() * 4)]!,
    CYCEn: r() < 0.3,
    CycThresh: Math.floor(r() * 3),
    PTWEn: r() < 0.5,
    FUPonPTW: r() < 0.5,
  };
  const filter: TraceFilter = { os, user };
  const ranges: [bigint, bigint][] = [];
  const roll = r();
  const span = (): [bigint, bigint] => {
    const a = Math.floor(r() * size);
    const b = a + Math.floor(r() * (size - a));
    return [BigInt(USER_BASE + a), BigInt(USER_BASE + b)];
  };
  if (roll < 0.3) {
    ranges.push(span());
    ctl.ADDR0_CFG = 1;
    filter.filters = [ranges[0]!];
  } else if (roll < 0.4) {
    ranges.push(span());
    ctl.ADDR0_CFG = 2;
    filter.stops = [ranges[0]!];
  }
  let cr3Match: bigint | undefined;
  if (r() < 0.15) {
    ctl.CR3Filter = 1;
    cr3Match = r() < 0.8 ? BigInt(CR3) : 0x2000n;
    filter.cr3 = cr3Match;
  }
  const overflow = r() < 0.1;
  return {
    ctl,
    ranges,
    filter,
    cr3Match,
    cyclesPerInsn: Math.floor(r() * 3),
    longTnt: r() < 0.3,
    internalBuffer: overflow ? { bytes: 64, drainPerCycle: 0.5 } : undefined,
  };
}

/** The size of the random program of `seed` (random-program.ts `randomProgram`'s count). */
export function programSize(seed: number): number {
  return 20 + ((seed * 37) % 180);
}
