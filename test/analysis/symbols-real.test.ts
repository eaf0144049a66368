/**
 * Symbols against binutils on system binaries: every function symbol nm lists (its
 * start and points inside it) and every `<name@plt>` label objdump prints.
 */
// test:quick skips this file: checks system binaries against nm and objdump.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { test } from "node:test";
import { SymbolHit, Symbolizer, SymbolTable } from "../../src/analysis/index.js";
import { type ElfFile, parseElf } from "../../src/image/elf.js";

/** Stripped system binaries (only .dynsym), and node itself, which has a full .symtab. */
const FILES = ["/bin/ls", "/bin/bash", "/lib/x86_64-linux-gnu/libc.so.6", process.execPath];

function tool(name: string): boolean {
  try {
    execFileSync(name, ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
const BINUTILS = tool("nm") && tool("objdump");

function run(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: "utf8", maxBuffer: 256 << 20 });
}

interface NmSym {
  start: bigint;
  size: bigint;
  names: Set<string>;
}

/** nm's defined symbols in code sections (both tables), by address. */
function nmFunctions(path: string, elf: ElfFile): NmSym[] {
  const code = elf.sections
    .filter((s) => (s.flags & 4) !== 0 && s.size > 0)
    .map((s) => {
      const lo = (BigInt(s.addrHi) << 32n) | BigInt(s.addrLo);
      return [lo, lo + BigInt(s.size)] as const;
    });
  const inCode = (a: bigint) => code.some(([lo, hi]) => a >= lo && a < hi);
  const byAddr = new Map<bigint, NmSym>();
  for (const args of [["-D"], []]) {
    let text = "";
    try {
      text = run("nm", [...args, "--defined-only", "-S", path]);
    } catch {
      continue; // "no symbols"
    }
    for (const line of text.split("\n")) {
      const m = /^([0-9a-f]+) (?:([0-9a-f]+) )?([TtWiw]) (.+)$/.exec(line);
      if (!m) continue;
      const start = BigInt(`0x${m[1]}`);
      if (!inCode(start)) continue;
      const size = m[2] ? BigInt(`0x${m[2]}`) : 0n;
      const had = byAddr.get(start);
      if (had) {
        had.names.add(m[4]!);
        if (size > had.size) had.size = size;
      } else byAddr.set(start, { start, size, names: new Set([m[4]!]) });
    }
  }
  return [...byAddr.values()].sort((a, b) => (a.start < b.start ? -1 : 1));
}

function at(table: SymbolTable, addr: bigint, hit: SymbolHit): boolean {
  return table.lookup(Number(addr >> 32n), Number(addr & 0xffffffffn), hit);
}

for (const path of FILES) {
  test(`${path}: function symbols match nm`, {
    skip: !BINUTILS ? "binutils absent" : existsSync(path) ? false : `${path} absent`,
  }, () => {
    const real = realpathSync(path);
    const elf = parseElf(new Uint8Array(readFileSync(real)));
    const table = new SymbolTable(elf, { name: path });
    assert.equal(table.diagnosticCount, 0, JSON.stringify(table.diagnostics));
    const syms = nmFunctions(real, elf);
    assert.ok(syms.length > 0);
    const hit = new SymbolHit();
    let interior = 0;
    for (let k = 0; k < syms.length; k++) {
      const s = syms[k]!;
      assert.ok(at(table, s.start, hit), `no symbol at 0x${s.start.toString(16)} (${[...s.names]})`);
      assert.equal(hit.offset, 0, `0x${s.start.toString(16)}: ${hit.name}+${hit.offset}`);
      assert.ok(s.names.has(hit.name), `0x${s.start.toString(16)}: ${hit.name} not in ${[...s.names]}`);
      // Interior points of sized symbols that no later nm symbol starts inside of.
      const next = syms[k + 1];
      if (s.size > 1n && (!next || next.start >= s.start + s.size)) {
        for (const off of [1n, s.size / 2n, s.size - 1n]) {
          assert.ok(at(table, s.start + off, hit));
          assert.ok(s.names.has(hit.name), `0x${(s.start + off).toString(16)}: ${hit.name}`);
          assert.equal(BigInt(hit.offset), off);
          interior++;
        }
      }
    }
    assert.ok(interior > 0);
  });

  test(`${path}: PLT stubs match objdump's <name@plt> labels`, {
    skip: !BINUTILS ? "binutils absent" : existsSync(path) ? false : `${path} absent`,
  }, () => {
    const real = realpathSync(path);
    const elf = parseElf(new Uint8Array(readFileSync(real)));
    const sym = new Symbolizer();
    sym.add(new SymbolTable(elf, { name: path }));
    const text = run("objdump", ["-d", "-j", ".plt", "-j", ".plt.sec", "-j", ".plt.got", real]);
    const labels = [...text.matchAll(/^([0-9a-f]+) <(.+@plt)>:$/gm)];
    assert.ok(labels.length > 0);
    // Every labelled stub, at its start and inside; and nothing else in the PLT gets a @plt name.
    const named = new Set<string>();
    for (const m of labels) {
      const addr = BigInt(`0x${m[1]}`);
      const hi = Number(addr >> 32n);
      const lo = Number(addr & 0xffffffffn);
      assert.equal(sym.format(hi, lo), m[2]);
      assert.equal(sym.format(hi, lo + 5), `${m[2]}+0x5`);
      named.add(m[1]!.replace(/^0+/, ""));
    }
    const starts = [...text.matchAll(/^ +([0-9a-f]+):/gm)].map((m) => BigInt(`0x${m[1]}`));
    const hit = new SymbolHit();
    for (const a of starts) {
      if (!sym.lookup(Number(a >> 32n), Number(a & 0xffffffffn), hit) || !hit.name.endsWith("@plt")) continue;
      const start = (BigInt(hit.startHi) << 32n) | BigInt(hit.startLo);
      assert.ok(named.has(start.toString(16)), `0x${a.toString(16)}: ${hit.name} not labelled by objdump`);
    }
  });
}
