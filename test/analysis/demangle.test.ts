/**
 * The demangler: both ways of instantiating it, C++ and Rust names, the suffixes it
 * keeps, libiberty's wording for special names, names it must leave alone, hostile
 * input, demangled names through SymbolTable and Symbolizer (once per symbol), and the
 * demangler loaded at the first mangled name (LazyDemangler).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import fc from "fast-check";
import {
  Demangler,
  isMangled,
  LazyDemangler,
  SymbolHit,
  Symbolizer,
  SymbolTable,
} from "../../src/analysis/index.js";
import { parseElf } from "../../src/image/elf.js";
import { demanglerWasmPath, loadDemangler } from "../../src/node/demangle-loader.js";
import { ET_EXEC, SHT_PROGBITS, SHT_STRTAB, writeElf } from "../../tools/elf/elf-writer.js";

// First, before anything instantiates it synchronously: the asynchronous form a browser uses.
const asyncDemangler = Demangler.instantiate(readFileSync(demanglerWasmPath()));

function demangler(): Demangler {
  const d = loadDemangler();
  assert.ok(d instanceof Demangler, String(d));
  return d;
}

test("instantiates from bytes, asynchronously and synchronously, one instance per realm", async () => {
  const a = await asyncDemangler;
  assert.equal(a.demangle("_ZN3foo3barE"), "foo::bar");
  assert.equal(demangler(), a);
  assert.equal(Demangler.instantiateSync(new Uint8Array(0)), a); // later bytes are not even compiled
});

test("C++ (Itanium) names, with clone suffixes", () => {
  const d = demangler();
  const cases: [string, string][] = [
    ["_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back(int const&)"],
    ["_ZNKSt5ctypeIcE8do_widenEc", "std::ctype<char>::do_widen(char) const"],
    ["_ZZ4mainENKUlvE_clEv", "main::{lambda()#1}::operator()() const"],
    ["_ZL3fooi.cold", "foo(int) [clone .cold]"],
    ["_Z3fooi.isra.0", "foo(int) [clone .isra.0]"],
    ["_ZN9__gnu_cxx13new_allocatorIcED2Ev", "__gnu_cxx::new_allocator<char>::~new_allocator()"],
  ];
  for (const [mangled, want] of cases) assert.equal(d.demangle(mangled), want, mangled);
});

test("special names in libiberty's wording (as c++filt, nm -C and perf print them)", () => {
  const d = demangler();
  assert.equal(d.demangle("_ZTV3Foo"), "vtable for Foo");
  assert.equal(d.demangle("_ZTT3Foo"), "VTT for Foo");
  assert.equal(d.demangle("_ZTI3Foo"), "typeinfo for Foo");
  assert.equal(d.demangle("_ZTS3Foo"), "typeinfo name for Foo");
  assert.equal(d.demangle("_ZThn16_N3Foo1fEv"), "non-virtual thunk to Foo::f()");
  assert.equal(d.demangle("_ZTv0_n24_N3Foo1fEv"), "virtual thunk to Foo::f()");
  assert.equal(d.demangle("_ZThn56_N3Foo4ReadEv.cold"), "non-virtual thunk to Foo::Read() [clone .cold]");
});

test("anonymous namespaces and empty parameter packs as libiberty prints them", () => {
  const d = demangler();
  assert.equal(d.demangle("_ZN12_GLOBAL__N_111gInclusionsE"), "(anonymous namespace)::gInclusions");
  assert.equal(d.demangle("_Z1fIiJEEvv"), "f<int>()");
});

// Rust legacy examples from the rustc-demangle crate's documentation (docs.rs/rustc-demangle):
// `_ZN4testE` is `test`, `_ZN3foo3barE` is `foo::bar`, and the alternate form drops the
// hash of `_ZN3foo17h05af221e174051e9E`. v0 examples from RFC 2603 as Linux perf's
// tests/demangle-rust-v0-test.c checks them, and LLVM's RustDemangleTest (`_RNvC1a4main`).
test("Rust legacy and v0 names (hash and crate disambiguators dropped)", () => {
  const d = demangler();
  const cases: [string, string][] = [
    ["_ZN4testE", "test"],
    ["_ZN3foo3barE", "foo::bar"],
    ["_ZN3foo17h05af221e174051e9E", "foo"],
    ["_ZN4core3fmt5Write10write_char17hcc5144a9a84f2b15E", "core::fmt::Write::write_char"],
    ["_RNvC1a4main", "a::main"],
    ["_RNvCs15kBYyAo9fc_7mycrate7example", "mycrate::example"],
    ["_RNvMs_Cs4Cv8Wi1oAIB_7mycrateNtB4_7Example3foo", "<mycrate::Example>::foo"],
    ["_RNvMsr_NtCs3ssYzQotkvD_3std4pathNtB5_7PathBuf3newCs15kBYyAo9fc_7mycrate", "<std::path::PathBuf>::new"],
  ];
  for (const [mangled, want] of cases) assert.equal(d.demangle(mangled), want, mangled);
});

test("version and PLT suffixes are kept; other names come back unchanged", () => {
  const d = demangler();
  assert.equal(d.demangle("_ZNSo5flushEv@@GLIBCXX_3.4"), "std::ostream::flush()@@GLIBCXX_3.4");
  assert.equal(d.demangle("_ZdlPv@plt"), "operator delete(void*)@plt");
  for (const name of [
    "main",
    "memcpy@plt",
    "_GLOBAL__sub_I_main",
    "__cxa_begin_catch",
    "_Z",
    "_R",
    "",
    "_Zx",
  ]) {
    assert.equal(d.demangle(name), name);
  }
  assert.equal(isMangled("_ZN3foo3barE"), true);
  assert.equal(isMangled("_RNvC1a4main"), true);
  assert.equal(isMangled("__Z3foov"), false);
});

test("hostile names: never throws, truncated and mutated names come back as strings", () => {
  const d = demangler();
  const real =
    "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE12_M_constructIPKcEEvT_S8_St20forward_iterator_tag";
  for (let n = 0; n <= real.length; n++) assert.equal(typeof d.demangle(real.slice(0, n)), "string");
  fc.assert(
    fc.property(fc.constantFrom("_Z", "_R", "_ZN", "_ZT"), fc.string({ maxLength: 200 }), (prefix, rest) => {
      const out = d.demangle(prefix + rest);
      assert.equal(typeof out, "string");
    }),
    { numRuns: 2000 },
  );
  // Deep nesting must not overflow anything.
  assert.equal(typeof d.demangle(`_Z1f${"PFv".repeat(5000)}${"E".repeat(5000)}`), "string");
  // After all that, it still works.
  assert.equal(d.demangle("_ZN3foo3barE"), "foo::bar");
});

/** An ELF with C++ and Rust function symbols in .symtab. */
function mangledElf(): Uint8Array {
  const names = ["_ZN3foo3barEv", "_RNvC1a4main", "plain"];
  const str = [0];
  const offsets = names.map((n) => {
    const at = str.length;
    for (const ch of n) str.push(ch.charCodeAt(0));
    str.push(0);
    return at;
  });
  const sym = new Uint8Array((names.length + 1) * 24);
  const v = new DataView(sym.buffer);
  offsets.forEach((name, k) => {
    const p = (k + 1) * 24;
    v.setUint32(p, name, true);
    v.setUint8(p + 4, 0x12); // global function
    v.setUint16(p + 6, 1, true);
    v.setBigUint64(p + 8, 0x401000n + BigInt(k) * 0x10n, true);
    v.setBigUint64(p + 16, 0x10n, true);
  });
  const layout = writeElf({
    is64: true,
    le: true,
    type: ET_EXEC,
    machine: 62,
    sections: [
      { name: ".text", type: SHT_PROGBITS, flags: 6n, addr: 0x401000n, data: new Uint8Array(0x30) },
      { name: ".symtab", type: 2, data: sym },
      { name: ".strtab", type: SHT_STRTAB, data: Uint8Array.from(str) },
    ],
  });
  new DataView(layout.bytes.buffer).setUint32(layout.shoff + 2 * 64 + 40, 3, true); // sh_link
  return layout.bytes;
}

test("SymbolTable and Symbolizer: demangled names in hits, each demangled once", () => {
  const d = demangler();
  const original = d.demangle;
  let calls = 0;
  d.demangle = (name: string) => {
    calls++;
    return original.call(d, name);
  };
  try {
    const elf = parseElf(mangledElf());
    const plain = new SymbolTable(elf);
    const hit = new SymbolHit();
    assert.ok(plain.lookup(0, 0x401004, hit));
    assert.equal(hit.name, "_ZN3foo3barEv");
    assert.equal(calls, 0);

    const sym = new Symbolizer({ demangler: d });
    sym.add(new SymbolTable(elf));
    for (let round = 0; round < 3; round++) {
      assert.equal(sym.format(0, 0x401004), "foo::bar()+0x4");
      assert.ok(sym.lookup(0, 0x401010, hit));
      assert.equal(hit.name, "a::main");
      assert.equal(hit.linkName, "_RNvC1a4main");
      assert.equal(sym.format(0, 0x401020), "plain");
    }
    assert.equal(calls, 3); // once per symbol, whatever the number of lookups

    const table = new SymbolTable(elf, { demangler: d });
    assert.deepEqual(
      Array.from({ length: table.size }, (_, k) => [table.symbolName(k), table.linkName(k)]),
      [
        ["foo::bar()", "_ZN3foo3barEv"],
        ["a::main", "_RNvC1a4main"],
        ["plain", "plain"],
      ],
    );
    table.useDemangler(undefined);
    assert.equal(table.symbolName(0), "_ZN3foo3barEv");
  } finally {
    d.demangle = original;
  }
});

test("LazyDemangler: loads at the first mangled name, once; a failed load leaves names as they are", () => {
  let loads = 0;
  const lazy = new LazyDemangler(
    () => {
      loads++;
      return demangler();
    },
    (why) => assert.fail(why),
  );
  assert.equal(lazy.demangle("main"), "main");
  assert.equal(lazy.demangle("_start"), "_start");
  assert.equal(loads, 0); // C names: nothing loaded
  assert.equal(lazy.demangle("_ZN3foo3barEv"), "foo::bar()");
  assert.equal(lazy.demangle("_RNvC1a4main"), "a::main");
  assert.equal(loads, 1);

  const failures: string[] = [];
  let tries = 0;
  const broken = new LazyDemangler(
    () => {
      tries++;
      return "cannot load the demangler (x.wasm): gone";
    },
    (why) => failures.push(why),
  );
  assert.equal(broken.demangle("plain"), "plain");
  assert.equal(tries, 0);
  assert.equal(broken.demangle("_ZN3foo3barEv"), "_ZN3foo3barEv");
  assert.equal(broken.demangle("_ZN3baz3quxEv"), "_ZN3baz3quxEv");
  assert.equal(tries, 1);
  assert.deepEqual(failures, ["cannot load the demangler (x.wasm): gone"]);

  // Through a symbol table: a table of C names never loads it.
  let tableLoads = 0;
  const table = new SymbolTable(parseElf(mangledElf()), {
    demangler: new LazyDemangler(
      () => {
        tableLoads++;
        return demangler();
      },
      (why) => assert.fail(why),
    ),
  });
  assert.equal(table.symbolName(2), "plain");
  assert.equal(tableLoads, 0);
  assert.equal(table.symbolName(0), "foo::bar()");
  assert.equal(tableLoads, 1);
});
