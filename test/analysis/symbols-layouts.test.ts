/**
 * Symbol tables of every ELF layout (64- and 32-bit, little- and big-endian) name the
 * same addresses: each symbol's value and size are read from the fields of its layout
 * (as 32-bit halves: values past 2^32, sizes whose high half is set), a size of 2^53
 * or more is skipped with a diagnostic naming the symbol, and of values spread over
 * 2^52 bytes or more those outside the window that holds the most are skipped.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SymbolHit, SymbolTable } from "../../src/analysis/index.js";
import { parseElf } from "../../src/image/elf.js";
import { SHT_PROGBITS, SHT_STRTAB, writeElf } from "../../tools/elf/elf-writer.js";
import { stringTable, symbolTable } from "./elf-tables.js";

const FUNC = 0x12;
const SHT_SYMTAB = 2;

/** A file of the layout: code at `text`, a .symtab of `syms` (name, value, size) in it. */
function fileOf(is64: boolean, le: boolean, text: bigint, syms: readonly [string, bigint, bigint][]) {
  const str = stringTable(syms.map(([n]) => n));
  const entries = syms.map(([n, value, size]) => [str.at(n), FUNC, 1, value, size] as const);
  const layout = writeElf({
    is64,
    le,
    sections: [
      { name: ".text", type: SHT_PROGBITS, flags: 6n, addr: text, data: new Uint8Array(0x400) },
      {
        name: ".symtab",
        type: SHT_SYMTAB,
        data: symbolTable(entries, { is64, le }),
        link: 3,
        entsize: is64 ? 24n : 16n,
      },
      { name: ".strtab", type: SHT_STRTAB, data: str.bytes },
    ],
  });
  return parseElf(layout.bytes);
}

/** `table`'s name and offset for each fourth address of [from, from + 0x500), as `name+off` or `-`. */
function names(table: SymbolTable, from: bigint): string[] {
  const hit = new SymbolHit();
  const out: string[] = [];
  for (let a = from; a < from + 0x500n; a += 4n)
    out.push(
      table.lookup(Number(a >> 32n), Number(a & 0xffffffffn), hit) ? `${hit.name}+${hit.offset}` : "-",
    );
  return out;
}

const LAYOUTS = [
  [true, true],
  [true, false],
  [false, true],
  [false, false],
] as const;

test("every layout: values and sizes read from their own fields", () => {
  const text = 0x8048000n;
  const syms: [string, bigint, bigint][] = [
    ["start", text, 0x40n],
    ["inner", text + 0x20n, 0x10n],
    ["middle", text + 0x100n, 0x80n],
    ["runs_on", text + 0x200n, 0n],
    ["last", text + 0x380n, 0x7fn],
  ];
  const want = names(new SymbolTable(fileOf(true, true, text, syms)), text - 0x40n);
  assert.ok(want.includes("inner+12") && want.includes("runs_on+380") && want.includes("-"));
  for (const [is64, le] of LAYOUTS)
    assert.deepEqual(
      names(new SymbolTable(fileOf(is64, le, text, syms)), text - 0x40n),
      want,
      `${is64 ? 64 : 32}-bit ${le ? "little" : "big"}-endian`,
    );
});

test("64-bit layouts: values past 2^32 and sizes with a high half, an absurd size skipped", () => {
  const text = 0xffffffff81000000n;
  const syms: [string, bigint, bigint][] = [
    ["kernel_a", text, 0x100n],
    ["kernel_b", text + 0x100n, 0x1_0000_0000n], // past the section and 2^32 bytes: cut at 2^64
    ["absurd", text + 0x80n, 1n << 53n],
    ["almost", text + 0x40n, (1n << 53n) - 1n],
  ];
  for (const le of [true, false]) {
    const table = new SymbolTable(fileOf(true, le, text, syms));
    const got = names(table, text);
    assert.equal(got[0], "kernel_a+0");
    assert.equal(got[0x10], "almost+0");
    assert.equal(got[0x40], "kernel_b+0");
    assert.equal(got[0xff], "kernel_b+764");
    assert.equal(table.diagnosticCount, 1);
    assert.match(table.diagnostics[0]!.message, /symbol 3 \(absurd\): st_size absurd/);
    const hit = new SymbolHit();
    assert.ok(table.lookup(0xffffffff, 0xffffffff, hit));
    assert.equal(hit.name, "kernel_b");
    assert.equal(hit.offset, 0x7efffeff);
  }
});

test("values 2^52 bytes apart or more: the window from the lowest keeps what lies within it", () => {
  const a = 0x1_0000_1000n;
  const syms: [string, bigint, bigint][] = [
    ["low", a, 0x10n],
    ["inside", a + (1n << 52n) - 0x800n, 0x10n], // its high half 2^20 past low's
    ["outside", a + (1n << 52n) + 0x800n, 0x10n],
  ];
  const table = new SymbolTable(fileOf(true, true, 0x1000n, syms));
  const hit = new SymbolHit();
  const at = (v: bigint) =>
    table.lookup(Number(v >> 32n), Number(v & 0xffffffffn), hit) ? `${hit.name}+${hit.offset}` : "-";
  assert.deepEqual(
    syms.map(([, v]) => at(v + 4n)),
    ["low+4", "inside+4", "-"],
  );
  assert.equal(table.diagnosticCount, 1);
  assert.match(table.diagnostics[0]!.message, /symbol outside at 0x10000100001800: 2\^52 bytes or more/);
});
