/**
 * The names perf 6.1 gives, on hand-built ELF files: its choice among aliases at one
 * address (sized, non-weak, global, fewer leading underscores, longer name), and with
 * SymbolTableOptions.perf its PLT stubs (by .rela.plt order in .plt, also for a table
 * whose names come from a debug file) and zero-size symbols reaching the next symbol
 * in another section (a gcc-built program's stubs are `_init+0x30` in perf script).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { SymbolHit, SymbolTable } from "../../src/analysis/index.js";
import { stubsFoundByTree, stubsFoundFirst, type TreeSymbols } from "../../src/analysis/perf-symbol-tree.js";
import { type RawSymbol, STB_GLOBAL } from "../../src/analysis/raw-symbol.js";
import { parseElf } from "../../src/image/elf.js";
import {
  ET_DYN,
  type SecSpec,
  SHT_NOBITS,
  SHT_PROGBITS,
  SHT_STRTAB,
  writeElf,
} from "../../tools/elf/elf-writer.js";
import { stringTable, symbolTable } from "./elf-tables.js";

const INIT = 0x1000n;
const PLT = 0x1020n;
const TEXT = 0x1060n;
const LOCAL = 0x02; // STB_LOCAL, STT_FUNC
const GLOBAL = 0x12;
const WEAK = 0x22;
const LABEL = 0x10; // STB_GLOBAL, STT_NOTYPE

type Sym = [name: string, info: number, shndx: number, value: bigint, size: bigint];

/** `entries` as a symbol table, their names in `str`. */
function symbols(entries: Sym[], str: { at: (n: string) => number }): Uint8Array {
  return symbolTable(entries.map(([name, ...rest]) => [name === "" ? 0 : str.at(name), ...rest] as const));
}

/** Aliases: each pair at one address, perf's pick first (sections: 1 .init, 2 .plt, 3 .text). */
const ALIASES: Sym[] = [
  ["__mprotect", LOCAL, 3, TEXT + 0x20n, 32n],
  ["mprotect", LOCAL, 3, TEXT + 0x20n, 32n], // fewer leading underscores
  ["__GI___read_nocancel", LOCAL, 3, TEXT + 0x40n, 32n],
  ["__read_nocancel", GLOBAL, 3, TEXT + 0x40n, 32n], // global over local
  ["weak_name", WEAK, 3, TEXT + 0x60n, 32n],
  ["__strong", GLOBAL, 3, TEXT + 0x60n, 32n], // non-weak over weak
  ["zero_size", GLOBAL, 3, TEXT + 0x80n, 0n],
  ["__sized", LOCAL, 3, TEXT + 0x80n, 32n], // sized over zero-size
  ["__x_short", LOCAL, 3, TEXT + 0xa0n, 32n],
  ["__GI___x_longer", LOCAL, 3, TEXT + 0xa0n, 32n], // longer name on a tie
  ["first_a", LOCAL, 3, TEXT + 0xc0n, 32n], // full tie: the first read
  ["first_b", LOCAL, 3, TEXT + 0xc0n, 32n],
  ["label_first", LABEL, 3, TEXT + 0xe0n, 16n],
  ["func_second", LOCAL, 3, TEXT + 0xe0n, 0n], // a function over a label, whatever the rest says
];

/**
 * A program laid out as gcc links one: .init (`_init`, zero size), a lazy .plt (header,
 * `abs`'s stub, an IRELATIVE stub), .text; `debug`: as its debug file (PLT sections empty).
 */
function program(o: { init: boolean; debug?: boolean; initAndStart?: boolean }): Uint8Array {
  const names = ["_init", "_start", "early", "later", ...ALIASES.map((a) => a[0])];
  const str = stringTable(names);
  // With _init, in this order perf's red-black tree has _init at its root and the stubs
  // below it (see perf-symbol-tree.ts): lookups in the PLT meet _init first.
  const syms: Sym[] = o.initAndStart
    ? [
        ["_init", GLOBAL, 1, INIT, 0n],
        ["_start", GLOBAL, 3, TEXT, 0x20n],
      ]
    : o.init
      ? [
          ["_init", GLOBAL, 1, INIT, 0n],
          ["early", LOCAL, 1, INIT - 0x800n, 0x10n],
          ["_start", GLOBAL, 3, TEXT, 0x20n],
          ["later", LOCAL, 3, TEXT + 0xe0n, 0x10n],
        ]
      : [["_start", GLOBAL, 3, TEXT, 0x20n], ...ALIASES];
  const dyn = stringTable(["abs"]);
  const dynsym = symbols([["abs", GLOBAL, 0, 0n, 0n]], dyn);
  const rela = new Uint8Array(48);
  const rv = new DataView(rela.buffer);
  rv.setBigUint64(0, 0x3018n, true);
  rv.setBigUint64(8, (1n << 32n) | 7n, true); // R_X86_64_JUMP_SLOT abs
  rv.setBigUint64(24, 0x3020n, true);
  rv.setBigUint64(32, 37n, true); // R_X86_64_IRELATIVE: symbol 0
  rv.setBigUint64(40, TEXT, true);
  const code = (name: string, addr: bigint, size: number, flags = 6n): SecSpec =>
    o.debug
      ? { name, type: SHT_NOBITS, flags, addr, size: BigInt(size) }
      : { name, type: SHT_PROGBITS, flags, addr, data: new Uint8Array(size) };
  const sections: SecSpec[] = [
    code(".init", INIT, 0x17),
    { ...code(".plt", PLT, 0x30), entsize: 16n },
    code(".text", TEXT, 0x100),
    { name: ".symtab", type: 2, data: symbols(syms, str), link: 5, entsize: 24n },
    { name: ".strtab", type: SHT_STRTAB, data: str.bytes },
    { name: ".dynsym", type: 11, data: dynsym, link: 7, entsize: 24n },
    { name: ".dynstr", type: SHT_STRTAB, data: dyn.bytes },
    o.debug
      ? { name: ".rela.plt", type: SHT_NOBITS, size: 48n, link: 6, entsize: 24n }
      : { name: ".rela.plt", type: 4, data: rela, link: 6, entsize: 24n },
  ];
  return writeElf({ is64: true, le: true, type: ET_DYN, machine: 62, sections }).bytes;
}

function name(table: SymbolTable, addr: bigint): string {
  const hit = new SymbolHit();
  return table.lookup(Number(addr >> 32n), Number(addr & 0xffffffffn), hit)
    ? `${hit.name}+0x${hit.offset.toString(16)}`
    : "-";
}

test("aliases at one address: perf's pick (a function, sized, non-weak, global, fewer underscores, longer name, first)", () => {
  const elf = parseElf(program({ init: false }));
  for (const table of [new SymbolTable(elf), new SymbolTable(elf, { perf: { plt: elf } })]) {
    const picks = [0x20n, 0x40n, 0x60n, 0x80n, 0xa0n, 0xc0n, 0xe0n].map((off) =>
      name(table, TEXT + off + 4n),
    );
    assert.deepEqual(picks, [
      "mprotect+0x4",
      "__read_nocancel+0x4",
      "__strong+0x4",
      "__sized+0x4",
      "__GI___x_longer+0x4",
      "first_a+0x4",
      "func_second+0x4",
    ]);
  }
});

test("perf's PLT stubs: by .rela.plt order after the header, `@plt` for symbol 0; none where a symbol reaches", () => {
  const bare = parseElf(program({ init: false }));
  const perf = new SymbolTable(bare, { perf: { plt: bare } });
  assert.deepEqual(
    [PLT, PLT + 0x10n, PLT + 0x1fn, PLT + 0x20n, PLT + 0x2fn].map((a) => name(perf, a)),
    ["-", "abs@plt+0x0", "abs@plt+0xf", "@plt+0x0", "@plt+0xf"],
  );
  // _init has no size: perf runs it to the next symbol (_start, in .text), over the PLT,
  // and finds it first there (as in a small gcc-built program).
  const gcc = parseElf(program({ init: true }));
  const withInit = new SymbolTable(gcc, { perf: { plt: gcc } });
  assert.deepEqual(
    [INIT, PLT + 0x10n, PLT + 0x2fn, TEXT].map((a) => name(withInit, a)),
    ["_init+0x0", "_init+0x30", "_init+0x4f", "_start+0x0"],
  );
  // _init and _start alone: inserting the stubs rotates the first to the tree's root,
  // the second below it and right of _init: perf finds both stubs first.
  const two = parseElf(program({ init: true, initAndStart: true }));
  assert.deepEqual(
    [PLT + 0x10n, PLT + 0x20n, PLT + 0x2fn, PLT].map((a) =>
      name(new SymbolTable(two, { perf: { plt: two } }), a),
    ),
    ["abs@plt+0x0", "@plt+0x0", "@plt+0xf", "_init+0x20"],
  );
  // Without the perf option the zero-size _init stops at its section's end.
  assert.equal(name(new SymbolTable(gcc), PLT + 0x10n), "-");
});

test("names from a debug file: the PLT stubs read from the binary", () => {
  const debug = parseElf(program({ init: false, debug: true }));
  const binary = parseElf(program({ init: false }));
  assert.equal(name(new SymbolTable(debug, { perf: { plt: debug } }), PLT + 0x10n), "-");
  const table = new SymbolTable(debug, { perf: { plt: binary } });
  assert.deepEqual(
    [PLT + 0x10n, PLT + 0x20n, TEXT + 0x24n].map((a) => name(table, a)),
    ["abs@plt+0x0", "@plt+0x0", "mprotect+0x4"],
  );
});

test("perf's tree: a zero-size symbol reaches the next start, a range may cross 2^32, and covers the stubs under it", () => {
  const tree = (values: [hi: number, lo: number, size: number][]): TreeSymbols => ({
    hi: values.map((v) => v[0]),
    lo: values.map((v) => v[1]),
    size: values.map((v) => v[2]),
  });
  const stub = (value: bigint): RawSymbol => ({
    name: `s${value.toString(16)}@plt`,
    value,
    size: 16,
    section: -1,
    rank: 2,
    binding: STB_GLOBAL,
  });
  const names = (found: RawSymbol[]) => found.map((p) => p.name);
  // A zero-size symbol at 0x1000 runs to the next one's start (0x3000): stubs inserted
  // below it in the tree are under it (perf's lookup meets it first); a stub that becomes
  // the root (two symbols only) is found.
  const stubs = [stub(0x2000n), stub(0x2010n)];
  const zero: [number, number, number][] = [
    [0, 0x1000, 0],
    [0, 0x3000, 0x10],
  ];
  assert.deepEqual(names(stubsFoundFirst(tree([...zero, [0, 0x500, 8], [0, 0x4000, 8]]), stubs)), []);
  assert.deepEqual(names(stubsFoundFirst(tree(zero), stubs)), ["s2000@plt", "s2010@plt"]);
  // Where it runs to 0x1800 only, the stubs past that are found.
  assert.deepEqual(
    names(
      stubsFoundFirst(
        tree([
          [0, 0x1000, 0],
          [0, 0x1800, 0x10],
          [0, 0x500, 8],
          [0, 0x4000, 8],
        ]),
        stubs,
      ),
    ),
    ["s2000@plt", "s2010@plt"],
  );
  // A symbol from below 2^32 to above it covers a stub just past 2^32, not one past its end.
  const across: [number, number, number][] = [
    [0, 0xfffff000, 0x2000],
    [1, 0x3000, 0x10],
    [0, 0x500, 8],
    [1, 0x4000, 8],
  ];
  assert.deepEqual(names(stubsFoundFirst(tree(across), [stub(0x100000800n), stub(0x100001000n)])), [
    "s100001000@plt",
  ]);
});

test("perf's tree is replayed only where a symbol may cover a stub: the stubs found are the tree's", () => {
  // Symbols and stubs around a low PLT, around 2^32 and in the kernel's range (where
  // values are sorted by comparison), zero-size and sized, many at one start (equal
  // keys go right in perf's tree).
  const base = fc.constantFrom(0x2000n, 0x1_0000_0000n - 0x40n, 0xffffffff_81000000n);
  const sym = fc.tuple(
    fc.integer({ min: -0x80, max: 0x80 }),
    fc.oneof(fc.constant(0), fc.nat(0x60), fc.constant(2 ** 40)),
  );
  const stubOf = (v: bigint): RawSymbol => ({
    name: `s${v.toString(16)}@plt`,
    value: v,
    size: 16,
    section: -1,
    rank: 2,
    binding: STB_GLOBAL,
  });
  fc.assert(
    fc.property(base, fc.array(sym, { maxLength: 24 }), fc.nat(6), (at, syms, nStubs) => {
      const values = syms.map(([d]) => at + BigInt(d * 4));
      const tree: TreeSymbols = {
        hi: values.map((v) => Number(v >> 32n)),
        lo: values.map((v) => Number(v & 0xffffffffn)),
        size: syms.map(([, size]) => size),
      };
      const stubs = Array.from({ length: nStubs }, (_, k) => stubOf(at + BigInt(0x10 * k)));
      const names = (found: RawSymbol[]) => found.map((p) => p.name);
      assert.deepEqual(names(stubsFoundFirst(tree, stubs)), names(stubsFoundByTree(tree, stubs)));
    }),
    { numRuns: 3000 },
  );
});
