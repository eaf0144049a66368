/**
 * fast-check arbitraries for the event layer's property tests: decoder configurations
 * and event streams (packet groups a processor emits, plus chaos), mutated.
 */
import fc from "fast-check";
import { ERRATA_NAMES } from "../../src/cpu/errata.js";
import type { DecoderConfig } from "../../src/event/config.js";
import { CfeType } from "../../src/packet/types.js";
import { config, Trace } from "./helpers.js";

export const anyConfig: fc.Arbitrary<DecoderConfig> = fc
  .record({
    errata: fc.subarray([...ERRATA_NAMES]),
    iflags: fc.boolean(),
    keep: fc.boolean(),
    mtcFreq: fc.constantFrom(0, 3, 9),
    nomFreq: fc.constantFrom(0, 4, 40),
    cpuid: fc.constantFrom([0, 0], [2, 100], [1, 3]),
  })
  .map((r) =>
    config(
      {
        enableIflagsEvents: r.iflags,
        keepTcalOnOvf: r.keep,
        mtcFreq: r.mtcFreq,
        nomFreq: r.nomFreq,
        cpuid15Eax: r.cpuid[0]!,
        cpuid15Ebx: r.cpuid[1]!,
      },
      r.errata,
    ),
  );

const IPS = [0x1000n, 0x1010n, 0x2000n, 0x7fff00001000n, 0xffffffff81000000n];
const ip = fc.option(fc.constantFrom(...IPS), { freq: 8 });
const u = (max: number) => fc.integer({ min: 0, max });

/** One step of an event stream: a packet or a typical packet group. */
export const step: fc.Arbitrary<(t: Trace) => void> = fc.oneof(
  fc.constant((t: Trace) => t.psb()),
  fc.constant((t: Trace) => t.psbend()),
  fc.tuple(ip).map(
    ([a]) =>
      (t: Trace) =>
        t.fup(a ?? undefined),
  ),
  fc.tuple(ip).map(
    ([a]) =>
      (t: Trace) =>
        t.tip(a ?? undefined),
  ),
  fc.tuple(ip).map(
    ([a]) =>
      (t: Trace) =>
        t.pge(a ?? undefined),
  ),
  fc.tuple(ip).map(
    ([a]) =>
      (t: Trace) =>
        t.pgd(a ?? undefined),
  ),
  fc.stringMatching(/^[!.]{1,47}$/).map((bits) => (t: Trace) => t.tnt(bits)),
  fc.tuple(fc.constantFrom(16, 32, 64, 0) as fc.Arbitrary<16 | 32 | 64 | 0>, fc.boolean()).map(
    ([m, i]) =>
      (t: Trace) =>
        t.mode(m, i),
  ),
  fc.tuple(fc.boolean(), fc.boolean()).map(
    ([a, b]) =>
      (t: Trace) =>
        t.tsx(a, b),
  ),
  fc.tuple(u(0xfffff), fc.boolean()).map(
    ([p, nr]) =>
      (t: Trace) =>
        t.pip(BigInt(p) << 12n, nr),
  ),
  u(0xfffff).map((p) => (t: Trace) => t.vmcs(BigInt(p) << 12n)),
  fc.constant((t: Trace) => t.ovf()),
  fc.constant((t: Trace) => t.stop()),
  u(255).map((r) => (t: Trace) => t.cbr(r)),
  u(0xfffffff).map((v) => (t: Trace) => t.tsc(BigInt(v))),
  u(255).map((v) => (t: Trace) => t.mtc(v)),
  fc.tuple(u(0xffff), u(0x1ff)).map(
    ([a, b]) =>
      (t: Trace) =>
        t.tma(a, b),
  ),
  u(0xffff).map((v) => (t: Trace) => t.cyc(v)),
  u(0xffff).map((v) => (t: Trace) => t.mnt(BigInt(v))),
  fc.tuple(u(0xffff), fc.boolean(), fc.boolean()).map(
    ([v, big, i]) =>
      (t: Trace) =>
        t.ptw(BigInt(v), big ? 8 : 4, i),
  ),
  fc.boolean().map((i) => (t: Trace) => t.exstop(i)),
  fc.tuple(u(255), u(3)).map(
    ([h, e]) =>
      (t: Trace) =>
        t.mwait(h, e),
  ),
  fc.tuple(u(15), u(15), fc.boolean()).map(
    ([a, b, h]) =>
      (t: Trace) =>
        t.pwre(a, b, h),
  ),
  fc.tuple(u(15), u(15)).map(
    ([a, b]) =>
      (t: Trace) =>
        t.pwrx(a, b),
  ),
  fc.tuple(fc.constantFrom(...Object.values(CfeType), 11, 31), u(255), fc.boolean()).map(
    ([c, v, i]) =>
      (t: Trace) =>
        t.cfe(c, v, i),
  ),
  fc.tuple(u(3), u(0xffff)).map(
    ([ty, p]) =>
      (t: Trace) =>
        t.evd(ty, BigInt(p)),
  ),
  fc.tuple(u(255), fc.option(u(3)), fc.boolean(), fc.boolean()).map(
    ([trbv, icnt, i, m]) =>
      (t: Trace) =>
        t.trig(trbv, { icnt: icnt ?? undefined, ip: i, mult: m }),
  ),
  fc.constant((t: Trace) => t.psb().fup(0x1000n).psbend()),
  fc.tuple(fc.constantFrom(...IPS), fc.constantFrom(...IPS)).map(
    ([a, b]) =>
      (t: Trace) =>
        t.fup(a).tip(b),
  ),
);

/** Event streams, each a PSB+ then steps, with a few bytes corrupted. */
export const mutatedStream: fc.Arbitrary<Uint8Array> = fc
  .tuple(
    fc.array(step, { minLength: 5, maxLength: 60 }),
    fc.array(fc.tuple(fc.nat(), u(255)), { maxLength: 4 }),
    fc.option(fc.nat()),
  )
  .map(([steps, edits, cut]) => {
    const t = new Trace().psb().mode(64).fup(0x1000n).psbend();
    for (const s of steps) s(t);
    const bytes = t.bytes();
    for (const [at, value] of edits) bytes[at % bytes.length] = value;
    return cut === null ? bytes : bytes.subarray(0, cut % (bytes.length + 1));
  });

/** A small deterministic PRNG (mulberry32) for the stream generator below. */
function prng(seed: number): () => number {
  let s = seed | 0;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Streams that mostly make sense: the generator tracks whether tracing is enabled and
 * emits what a processor would (branches while tracing, TIP.PGE while not, FUP-bound
 * groups, overflows resolving either way, PSB+ headers), with a little chaos, and the
 * errata-relevant overflow shapes (a lost FUP, a spurious TIP.PGD or FUP) often.
 */
export function coherentTrace(seed: number): Uint8Array {
  const rnd = prng(seed);
  const int = (n: number) => Math.floor(rnd() * n);
  const pick = <T>(a: readonly T[]): T => a[int(a.length)]!;
  const chance = (p: number) => rnd() < p;
  const t = new Trace();
  let enabled = false;
  const someIp = () => (chance(0.05) ? undefined : pick(IPS));
  const timing = () => {
    const c = int(5);
    if (c === 0) t.tsc(BigInt(int(1e9)));
    else if (c === 1) t.mtc(int(256));
    else if (c === 2) t.cyc(int(5000));
    else if (c === 3) t.cbr(1 + int(50));
    else t.tma(int(0x10000), int(0x200));
  };
  const header = () => {
    t.psb();
    if (chance(0.8)) t.mode(pick([16, 32, 64] as const), chance(0.5));
    enabled = chance(0.7);
    if (enabled) t.fup(pick(IPS));
    for (let i = int(5); i > 0; i--) {
      const c = int(6);
      if (c === 0) t.pip(BigInt(int(1 << 20)) << 12n, chance(0.3));
      else if (c === 1) t.vmcs(BigInt(int(1 << 20)) << 12n);
      else if (c === 2) t.tsx(chance(0.5));
      else if (c === 3) t.mnt(BigInt(int(1e6)));
      else timing();
    }
    if (chance(0.95)) t.psbend();
    else t.ovf();
  };
  const overflow = () => {
    t.ovf();
    if (chance(0.5)) timing();
    if (chance(0.2)) t.tsx(true);
    const r = int(9);
    if (r === 0) t.fup(pick(IPS));
    else if (r === 1) t.pgd();
    else if (r === 2) t.fup(pick(IPS)).pge(pick(IPS));
    else if (r === 3) t.tip(pick(IPS));
    else if (r === 4) t.tnt("!!");
    else if (r === 5) header();
    else if (r === 6) t.fup(pick(IPS)).pip(0x1000n).stop();
    else if (r === 7) t.mode(64).pge(pick(IPS));
    else t.pip(0x2000n).vmcs(0x3000n).mode(32);
    enabled = r === 0 || r === 2 || r === 3 || r === 4 || r === 7 || (r === 5 && enabled);
  };
  if (chance(0.95)) header();
  for (let n = 5 + int(60); n > 0; n--) {
    const c = int(32);
    if (chance(0.03)) {
      // Chaos: a packet out of place.
      const x = int(6);
      if (x === 0) t.tip(someIp());
      else if (x === 1) t.tnt("!.");
      else if (x === 2) t.fup(someIp());
      else if (x === 3) t.pgd(someIp());
      else if (x === 4) t.psbend();
      else t.exstop(true);
    } else if (c < 3) timing();
    else if (c === 3) header();
    else if (c < 6) overflow();
    else if (c === 6) t.pwre(int(16), int(16), chance(0.5)).pwrx(int(16), int(16));
    else if (c === 7) t.mnt(BigInt(int(1e9)));
    else if (c === 8) t.stop();
    else if (enabled) {
      if (c < 14)
        t.tnt(
          Array.from({ length: 1 + int(chance(0.2) ? 47 : 6) }, () => (chance(0.5) ? "!" : ".")).join(""),
        );
      else if (c < 17) t.tip(someIp());
      else if (c === 17) {
        t.fup(pick(IPS));
        if (chance(0.3)) t.pip(BigInt(int(1 << 20)) << 12n);
        if (chance(0.3)) t.vmcs(0x5000n);
        if (chance(0.3)) t.mode(pick([32, 64] as const), chance(0.5));
        t.tip(someIp());
      } else if (c === 18) {
        t.fup(pick(IPS));
        if (chance(0.3)) t.mode(64);
        t.pgd(chance(0.5) ? undefined : pick(IPS));
        enabled = false;
      } else if (c === 19) {
        if (chance(0.3)) t.mode(pick([32, 64] as const));
        t.pgd();
        enabled = false;
      } else if (c === 20) t.tsx(chance(0.5), chance(0.3)).fup(pick(IPS));
      else if (c === 21) t.ptw(BigInt(int(1e9)), pick([4, 8] as const), chance(0.7)).fup(pick(IPS));
      else if (c === 22) {
        if (chance(0.5)) t.mwait(int(256), int(4));
        t.exstop(chance(0.7));
        if (chance(0.8)) t.fup(pick(IPS));
      } else if (c === 23) {
        if (chance(0.3)) t.evd(0, 0xdeadn);
        if (chance(0.3)) t.evd(1, 7n).evd(2, 9n);
        t.cfe(pick([...Object.values(CfeType), 11]), int(256), chance(0.6));
        if (chance(0.8)) t.fup(pick(IPS));
        if (chance(0.5)) t.tip(pick(IPS));
      } else if (c === 24) {
        t.trig(int(256), { icnt: chance(0.7) ? 0 : undefined, ip: chance(0.5), mult: chance(0.2) });
        if (chance(0.6)) t.fup(pick(IPS));
      } else if (c === 25) t.mode(pick([16, 32, 64] as const), chance(0.5)).tip(someIp());
      else if (c === 26) t.pip(BigInt(int(1 << 20)) << 12n, chance(0.3));
      else if (c === 27) t.vmcs(BigInt(int(1 << 20)) << 12n);
      else t.tnt("!");
    } else if (c < 16) {
      if (chance(0.4)) t.mode(pick([16, 32, 64] as const), chance(0.5));
      t.pge(someIp());
      enabled = true;
    } else if (c === 16) t.tsx(chance(0.5), chance(0.3));
    else if (c === 17) t.pip(BigInt(int(1 << 20)) << 12n);
    else if (c === 18) t.vmcs(0x3000n);
    else if (c === 19) t.ptw(5n, 4, false);
    else if (c === 20) t.exstop(false);
    else if (c === 21) t.cfe(pick(Object.values(CfeType)), int(256), false);
    else if (c === 22) t.trig(int(256), { icnt: chance(0.5) ? 0 : undefined });
    else if (c === 23) t.mwait(1, 2).exstop(false);
    else timing();
  }
  return t.bytes();
}

/** {@link coherentTrace}s, sometimes with a few bytes changed or cut short. */
export const coherentStream: fc.Arbitrary<Uint8Array> = fc
  .tuple(
    fc.integer(),
    fc.array(fc.tuple(fc.nat(), u(255)), { maxLength: 3 }),
    fc.option(fc.nat(), { freq: 4 }),
  )
  .map(([seed, edits, cut]) => {
    const bytes = coherentTrace(seed);
    for (const [at, value] of edits) bytes[at % bytes.length] = value;
    return cut === null ? bytes : bytes.subarray(0, cut % (bytes.length + 1));
  });
