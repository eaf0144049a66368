/**
 * Demangled names against binutils' c++filt for every symbol of a C++ program
 * compiled here and of the system's libstdc++. ptkit prints cpp_demangle's forms;
 * `c++filt -i` (no verbose expansion) prints what nm -C and perf print. The two
 * differ in presentation in a few documented ways that {@link presentation}
 * folds; beyond that, only the known mistakes of cpp_demangle 0.4 ({@link KNOWN_MISTAKES})
 * may differ, each listed as a diagnostic.
 */
// test:quick skips this file: runs c++filt over system libraries.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TestContext, test } from "node:test";
import { Demangler, SymbolHit, SymbolTable } from "../../src/analysis/index.js";
import { parseElf } from "../../src/image/elf.js";
import { loadDemangler } from "../../src/node/demangle-loader.js";

function tool(name: string, arg = "--version"): boolean {
  try {
    execFileSync(name, [arg], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
const HAVE_GXX = tool("g++");
const HAVE_BINUTILS = tool("c++filt") && tool("nm");
const LIBSTDCXX = [
  "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
  "/usr/lib64/libstdc++.so.6",
  "/usr/lib/libstdc++.so.6",
].find(existsSync);

/** A program with the C++ features whose names demangle differently: templates, lambdas, operators, thunks. */
const PROGRAM = `
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>
namespace geo {
template <typename T> struct Point { T x, y; Point operator+(const Point& o) const { return {x + o.x, y + o.y}; } };
struct Shape { virtual ~Shape() = default; virtual double area() const = 0; };
struct Named { virtual ~Named() = default; virtual std::string name() const { return "named"; } };
struct Square : Shape, Named {
  double s; explicit Square(double s) : s(s) {}
  double area() const override { return s * s; }
  std::string name() const override { return "square"; }
};
}
namespace { int hidden(int x) { return x * 3; } }
static int file_local(const std::vector<int>& v) { int t = 0; for (int x : v) t += x; return t; }
template <typename F> int apply(F f, int n) { return f(n); }
int main(int argc, char**) {
  std::vector<std::unique_ptr<geo::Shape>> shapes;
  shapes.push_back(std::make_unique<geo::Square>(argc + 1.0));
  std::map<std::string, geo::Point<long>> m;
  m["a"] = geo::Point<long>{1, 2} + geo::Point<long>{argc, 4};
  std::vector<int> v{1, 2, 3};
  int r = apply([&](int n) { return n + file_local(v) + hidden(n); }, argc);
  geo::Named* named = dynamic_cast<geo::Named*>(shapes[0].get());
  std::printf("%f %ld %d %s\\n", shapes[0]->area(), m["a"].x, r, named->name().c_str());
  return 0;
}
`;

const ABBREVIATIONS: [string, string][] = [
  ["std::basic_string<char, std::char_traits<char>, std::allocator<char> >", "std::string"],
  ["std::basic_istream<char, std::char_traits<char> >", "std::istream"],
  ["std::basic_ostream<char, std::char_traits<char> >", "std::ostream"],
  ["std::basic_iostream<char, std::char_traits<char> >", "std::iostream"],
  ["decltype(nullptr)", "std::nullptr_t"],
];
const LITERAL_SUFFIX: Record<string, string> = {
  int: "",
  "unsigned int": "u",
  long: "l",
  "unsigned long": "ul",
  "long long": "ll",
  "unsigned long long": "ull",
};

/**
 * Both spellings folded to one: the std abbreviations (cpp_demangle abbreviates
 * `Ss` but spells out `Si`, `So`, `Sd`; libiberty without DMGL_VERBOSE abbreviates
 * all), `> >` or `>>` closing nested templates, their constructors and destructors (`std::string::~string` for libiberty's
 * `~basic_string`), integer template arguments (`(long)1` for `1l`).
 */
function presentation(name: string): string {
  const closeNested = (text: string) => text.replace(/> (?=>)/g, ">"); // newer libiberty: C++11 style
  name = closeNested(name);
  for (const [long, short] of ABBREVIATIONS) name = name.split(closeNested(long)).join(short);
  name = name.replace(/std::(string|istream|ostream|iostream)::(~?)basic_\1\(/g, "std::$1::$2$1(");
  return name.replace(
    /\((int|unsigned int|long|unsigned long|long long|unsigned long long)\)(-?\d+)/g,
    (_, t, n) => {
      return `${n}${LITERAL_SUFFIX[t]}`;
    },
  );
}

/**
 * Manglings cpp_demangle 0.4 gets wrong (c++filt is right), by the construct in the
 * mangled name: a template parameter reused through a substitution in a parameter
 * list (`ET_S2_`: `basic_string<char*>(char*, char*, ...)` loses the second `char*`),
 * a pack of forwarding references (`DpOT_` loses the `&&`), a reference to a nested
 * name through a substitution (`RNS1_15__upcast_resultE` puts the `&` inside the
 * name), a conversion operator to a pointer to member (`cvM`).
 */
const KNOWN_MISTAKES: readonly RegExp[] = [/T_S[0-9A-Z]*_/, /Dp[OR]T[0-9]*_/, /RNS[0-9A-Z]*_[0-9]/, /cvM/];

/** Whether ours and c++filt's agree up to presentation; c++filt also prints template functions' return types. */
function agree(ours: string, filt: string): boolean {
  if (ours === filt) return true;
  const o = presentation(ours);
  const f = presentation(filt);
  return o === f || f.endsWith(` ${o}`);
}

/** Every distinct defined symbol name of a file (both tables), version suffixes dropped. */
function symbolNames(path: string): string[] {
  const names = new Set<string>();
  for (const args of [["-D"], []]) {
    let text = "";
    try {
      text = execFileSync("nm", [...args, "--defined-only", path], { encoding: "utf8", maxBuffer: 1 << 28 });
    } catch {
      continue;
    }
    for (const line of text.split("\n")) {
      const m = /^[0-9a-f]* *[A-Za-z] (.+)$/.exec(line);
      if (m) names.add(m[1]!.replace(/@.*$/, ""));
    }
  }
  return [...names];
}

function cxxfilt(names: string[]): string[] {
  const out = execFileSync("c++filt", ["-i"], {
    input: `${names.join("\n")}\n`,
    encoding: "utf8",
    maxBuffer: 1 << 28,
  });
  return out.split("\n").slice(0, names.length);
}

/** Compare every name; returns the mangled names that disagree beyond presentation. */
function compare(
  t: TestContext,
  d: Demangler,
  path: string,
): { total: number; mangled: number; differ: string[]; known: string[] } {
  const names = symbolNames(path);
  const filt = cxxfilt(names);
  const differ: string[] = [];
  const known: string[] = [];
  let mangled = 0;
  names.forEach((name, k) => {
    const ours = d.demangle(name);
    if (ours !== name) mangled++;
    if (agree(ours, filt[k]!)) return;
    if (KNOWN_MISTAKES.some((m) => m.test(name))) known.push(name);
    else differ.push(name);
  });
  for (const name of [...differ, ...known].slice(0, 20)) {
    t.diagnostic(`${name}\n  ptkit:    ${d.demangle(name)}\n  c++filt:  ${cxxfilt([name])[0]}`);
  }
  t.diagnostic(
    `${path}: ${names.length} symbols, ${mangled} demangled; differing from c++filt -i: ` +
      `${known.length} by cpp_demangle's known mistakes, ${differ.length} otherwise`,
  );
  return { total: names.length, mangled, differ, known };
}

test("every symbol of a C++ program compiled here demangles as c++filt does", {
  skip: !HAVE_GXX ? "g++ is not installed" : !HAVE_BINUTILS ? "binutils (nm, c++filt) not installed" : false,
}, (t) => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-demangle-"));
  try {
    writeFileSync(join(dir, "shapes.cc"), PROGRAM);
    const exe = join(dir, "shapes");
    execFileSync("g++", ["-O1", "-g", "-o", exe, join(dir, "shapes.cc")]);
    const d = loadDemangler();
    assert.ok(d instanceof Demangler, String(d));
    const { total, mangled, differ } = compare(t, d, exe);
    assert.ok(mangled >= 20, `only ${mangled} of ${total} names were demangled`);
    assert.deepEqual(differ, []);
    // And through the symbol table: the demangled name of every function symbol, found at its address.
    const table = new SymbolTable(parseElf(new Uint8Array(readFileSync(exe))), { demangler: d });
    const hit = new SymbolHit();
    let seen = 0;
    for (let k = 0; k < table.size; k++) {
      assert.ok(table.lookup(table.symbolStartHi(k), table.symbolStartLo(k), hit));
      assert.equal(hit.name, d.demangle(hit.linkName));
      if (hit.name.includes("geo::Square::area() const")) seen++;
    }
    assert.ok(seen > 0, "geo::Square::area() const not found");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("every symbol of the system's libstdc++ demangles as c++filt does, but for cpp_demangle's known mistakes", {
  skip: !HAVE_BINUTILS
    ? "binutils (nm, c++filt) not installed"
    : LIBSTDCXX
      ? false
      : "no libstdc++.so.6 found",
}, (t) => {
  const d = loadDemangler();
  assert.ok(d instanceof Demangler, String(d));
  const { total, mangled, differ, known } = compare(t, d, LIBSTDCXX!);
  assert.ok(mangled > 1000, `only ${mangled} of ${total} names were demangled`);
  assert.deepEqual(differ, []);
  assert.ok(known.length * 100 < total, `${known.length} of ${total} names are demangled wrongly`);
});

// V8 and Node's templates reach further into cpp_demangle's gaps (function addresses
// as template arguments printed with their signature, function-type spacing, names it
// cannot demangle at all); still 98% of the names come out as c++filt prints them.
test("node's own C++ symbols demangle as c++filt does for all but 2%", {
  skip: !HAVE_BINUTILS ? "binutils (nm, c++filt) not installed" : false,
}, (t) => {
  const d = loadDemangler();
  assert.ok(d instanceof Demangler, String(d));
  const { mangled, differ, known } = compare(t, d, process.execPath);
  if (mangled < 1000) {
    t.skip(`${process.execPath} has only ${mangled} C++ symbols (stripped?)`);
    return;
  }
  const wrong = differ.length + known.length;
  assert.ok(wrong * 50 < mangled, `${wrong} of ${mangled} demangled names differ from c++filt's`);
});
