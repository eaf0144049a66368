/** Symbols and randomness for the analyses' model tests (folded stacks, latencies). */
import assert from "node:assert/strict";
import { Symbolizer, SymbolTable } from "../../src/analysis/index.js";
import { tryParseElf } from "../../src/image/index.js";
import { elfWithSymbols } from "../../tools/perf/pt-file.js";

/** A symbolizer of one executable, named "main": `functions` of `size` bytes each, one after the other from `base`. */
export function functionsSymbolizer(functions: readonly string[], base: number, size: number): Symbolizer {
  const elf = tryParseElf(
    elfWithSymbols(
      BigInt(base),
      new Uint8Array(size * functions.length),
      functions.map((name, i) => ({ name, value: BigInt(base + size * i), size })),
    ),
  );
  assert.ok(!(elf instanceof Error));
  const s = new Symbolizer();
  s.add(new SymbolTable(elf, { name: "main" }));
  return s;
}

/** A seeded generator (Park-Miller): each call a number below `n`. */
export function prng(seed: number): (n: number) => number {
  let x = seed;
  return (n) => {
    x = (x * 48271) % 2147483647;
    return x % n;
  };
}
