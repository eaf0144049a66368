/**
 * `ptkit symbols` and the source-line adapter, against addr2line (and llvm-symbolizer
 * when installed) on a C program compiled here with -g: function and offset from
 * ptkit's symbol table, file:line and inlined frames from the tool, a load bias, and
 * the batching and caching of the adapter.
 */
// test:quick skips this file: compiles programs and runs addr2line.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { main } from "../../src/cli/ptkit.js";
import { parseAddr2line, parseLlvmJson, SourceLines, toolRuns } from "../../src/node/srcline.js";
import { captureIo } from "../conformance/ptt.js";
import { madeElf } from "../image/made-elf.js";

const HAVE_GCC = toolRuns("gcc");
const HAVE_ADDR2LINE = toolRuns("addr2line") && toolRuns("nm") && toolRuns("objdump");
const HAVE_LLVM = toolRuns("llvm-symbolizer");
const SKIP = !HAVE_GCC
  ? "gcc is not installed"
  : !HAVE_ADDR2LINE
    ? "binutils (addr2line, nm, objdump) missing"
    : false;

const SOURCE = `#include <stdio.h>
static inline int square(int x) {
  return x * x;
}
int work(int n) {
  int t = 0;
  for (int i = 0; i < n; i++) t += square(i);
  return t;
}
int main(int argc, char **argv) {
  (void)argv;
  printf("%d\\n", work(argc * 10));
  return 0;
}
`;

async function run(cwd: string, ...argv: string[]) {
  const io = captureIo(cwd);
  const code = await main(["symbols", ...argv], io);
  return { code, out: io.out.join(""), err: io.err.join("") };
}

/** addr2line's own answer for one address: [function, file:line] pairs, innermost first. */
function addr2line(exe: string, addr: bigint): [string, string][] {
  const text = execFileSync("addr2line", ["-e", exe, "-f", "-i", "-C", `0x${addr.toString(16)}`], {
    encoding: "utf8",
  });
  const lines = text.trimEnd().split("\n");
  const pairs: [string, string][] = [];
  // ptkit prints an unknown line as 0, as addr2line does when it knows nothing.
  for (let k = 0; k + 1 < lines.length; k += 2) {
    pairs.push([lines[k]!, lines[k + 1]!.replace(/ \(discriminator \d+\)$/, "").replace(/:\?$/, ":0")]);
  }
  return pairs;
}

/** ptkit symbols output, per address: the symbol column, the location and the inlining lines. */
function parseOutput(
  text: string,
): { addr: bigint; sym: string; where: string | undefined; inlined: string[] }[] {
  const rows: { addr: bigint; sym: string; where: string | undefined; inlined: string[] }[] = [];
  for (const line of text.trimEnd().split("\n")) {
    if (line.startsWith("    ")) {
      rows.at(-1)!.inlined.push(line.trim());
      continue;
    }
    const [addr, sym, where] = line.split(" ");
    rows.push({ addr: BigInt(addr!), sym: sym!, where, inlined: [] });
  }
  return rows;
}

describe("ptkit symbols on a program compiled with -g", { skip: SKIP }, () => {
  let dir = "";
  let exe = "";
  let addrs: bigint[] = [];
  let nm = new Map<bigint, string>();
  const sizes = new Map<bigint, bigint>();

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "ptkit-symbols-"));
    writeFileSync(join(dir, "p.c"), SOURCE);
    exe = join(dir, "p");
    execFileSync("gcc", ["-O2", "-g", "-o", exe, join(dir, "p.c")]);
    // Every instruction of .text, as objdump disassembles it.
    const dis = execFileSync("objdump", ["-d", "-j", ".text", exe], { encoding: "utf8" });
    addrs = [...dis.matchAll(/^ +([0-9a-f]+):/gm)].map((m) => BigInt(`0x${m[1]}`));
    const listing = execFileSync("nm", ["-S", exe], { encoding: "utf8" });
    nm = new Map();
    for (const m of listing.matchAll(/^([0-9a-f]+) (?:([0-9a-f]+) )?[Tt] (\S+)$/gm)) {
      const start = BigInt(`0x${m[1]}`);
      nm.set(start, m[3]!);
      if (m[2]) sizes.set(start, BigInt(`0x${m[2]}`));
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const tool of ["addr2line", "llvm-symbolizer"]) {
    test(`every instruction of .text: symbol as nm, lines and inlining as addr2line (${tool})`, {
      skip: tool === "llvm-symbolizer" && !HAVE_LLVM ? "llvm-symbolizer is not installed" : false,
    }, async () => {
      const hex = addrs.map((a) => `0x${a.toString(16)}`);
      const r = await run(dir, "--tool", tool, "p", ...hex);
      assert.equal(r.code, 0, r.err);
      assert.equal(r.err, "");
      const rows = parseOutput(r.out);
      assert.equal(rows.length, addrs.length);
      const starts = [...nm.keys()].sort((a, b) => (a < b ? -1 : 1));
      let inlinedSeen = 0;
      rows.forEach((row, k) => {
        const addr = addrs[k]!;
        assert.equal(row.addr, addr);
        // The symbol: nm's nearest function symbol at or below, and the offset into
        // it; none in the padding after a sized one.
        const start = starts.filter((s) => s <= addr).at(-1)!;
        const off = addr - start;
        const size = sizes.get(start);
        const want =
          size !== undefined && off >= size
            ? "??"
            : off === 0n
              ? nm.get(start)
              : `${nm.get(start)}+0x${off.toString(16)}`;
        assert.equal(row.sym, want, `0x${addr.toString(16)}`);
        // The source: addr2line's frames, innermost first.
        const frames = addr2line(exe, addr);
        assert.equal(row.where, frames[0]![1], `0x${addr.toString(16)}`);
        const wantInlined = frames
          .slice(0, -1)
          .map(([f], i) => `${f} inlined into ${frames[i + 1]![0]} at ${frames[i + 1]![1]}`);
        assert.deepEqual(row.inlined, wantInlined, `0x${addr.toString(16)}`);
        if (row.inlined.some((l) => l.startsWith("square inlined into work at ") && l.endsWith("p.c:7")))
          inlinedSeen++;
      });
      assert.ok(inlinedSeen > 0, "square's inlining into work was not reported");
    });
  }

  test("a load bias: run-time addresses give the same answers", async () => {
    const bias = 0x5555_5555_4000n;
    const some = addrs.filter((_, k) => k % 7 === 0);
    const plain = await run(dir, "--tool", "addr2line", "p", ...some.map((a) => `0x${a.toString(16)}`));
    const biased = await run(
      dir,
      "--tool",
      "addr2line",
      "--bias",
      `0x${bias.toString(16)}`,
      "p",
      ...some.map((a) => `0x${(a + bias).toString(16)}`),
    );
    assert.equal(biased.code, 0, biased.err);
    const strip = (text: string) => text.split("\n").map((l) => l.replace(/^0x[0-9a-f]+ /, ""));
    assert.deepEqual(strip(biased.out), strip(plain.out));
    assert.match(biased.out, /^0x0000555555555/);
  });

  test("without addresses: every function symbol, as nm lists them", async () => {
    const r = await run(dir, "--no-lines", "p");
    assert.equal(r.code, 0, r.err);
    const listed = new Map(
      r.out
        .trimEnd()
        .split("\n")
        .map((l) => l.split(" ") as [string, string])
        .map(([a, n]) => [BigInt(a), n]),
    );
    for (const [addr, name] of nm) assert.equal(listed.get(addr), name, `0x${addr.toString(16)}`);
  });

  test("--no-lines prints no location; --addresses reads a file", async () => {
    writeFileSync(join(dir, "addrs.txt"), `${[...nm.keys()].map((a) => `0x${a.toString(16)}`).join("\n")}\n`);
    const r = await run(dir, "--no-lines", "--addresses", "addrs.txt", "p");
    assert.equal(r.code, 0, r.err);
    const lines = r.out.trimEnd().split("\n");
    assert.equal(lines.length, nm.size);
    for (const line of lines) assert.equal(line.split(" ").length, 2, line);
    assert.ok(lines.some((l) => l.endsWith(" work")));
  });
});

test("C++ names come out demangled (and --no-demangle keeps them)", {
  skip: toolRuns("g++") ? false : "g++ is not installed",
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-symbols-cc-"));
  try {
    writeFileSync(
      join(dir, "q.cc"),
      "namespace ns { int twice(int x) { return 2 * x; } }\nint main(int c, char**) { return ns::twice(c); }\n",
    );
    execFileSync("g++", ["-O0", "-o", join(dir, "q"), join(dir, "q.cc")]);
    const start = /^([0-9a-f]+) T _ZN2ns5twiceEi$/m.exec(
      execFileSync("nm", [join(dir, "q")], { encoding: "utf8" }),
    )![1]!;
    const r = await run(
      dir,
      "--no-lines",
      "q",
      `0x${start}`,
      `0x${(BigInt(`0x${start}`) + 4n).toString(16)}`,
    );
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(
      r.out
        .trimEnd()
        .split("\n")
        .map((l) => l.split(" ").slice(1).join(" ")),
      ["ns::twice(int)", "ns::twice(int)+0x4"],
    );
    const m = await run(dir, "--no-lines", "--no-demangle", "q", `0x${start}`);
    assert.match(m.out, / _ZN2ns5twiceEi\n$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("bad input: not an ELF file, a bad address, a missing file, no file", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-symbols-bad-"));
  try {
    writeFileSync(join(dir, "junk"), "not an elf file at all");
    const junk = await run(dir, "junk", "0x10");
    assert.equal(junk.code, 1);
    assert.match(
      junk.err,
      /^ptkit symbols: junk: ELF header: .*not an ELF file.* at offset 0x0: give the program or library/,
    );
    const addr = await run(dir, "--no-lines", process.execPath, "0xzz");
    assert.equal(addr.code, 1);
    assert.match(addr.err, /bad address: 0xzz/);
    const missing = await run(dir, "nope");
    assert.equal(missing.code, 1);
    assert.match(missing.err, /cannot read nope/);
    const none = await run(dir);
    assert.equal(none.code, 1);
    assert.match(none.err, /expected an ELF file/);
    const tool = await run(dir, "--tool", "gdb", "junk");
    assert.match(tool.err, /--tool: want llvm-symbolizer or addr2line, not gdb/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("no source-line tool installed: symbols still come, with a note on how to get lines", async () => {
  const path = process.env.PATH;
  // A PATH of one empty directory of our own: no tool in it, whatever the machine has.
  const empty = mkdtempSync(join(tmpdir(), "ptkit-symbols-path-"));
  process.env.PATH = empty;
  try {
    const auto = await run(process.cwd(), process.execPath, "0x0");
    assert.equal(auto.code, 0, auto.err);
    assert.match(auto.out, /^0x0000000000000000 \?\?\n$/);
    assert.match(auto.err, /no source lines: neither llvm-symbolizer nor addr2line found \(install binutils/);
    const named = await run(process.cwd(), "--tool", "addr2line", process.execPath, "0x0");
    assert.match(named.err, /no source lines: addr2line does not run \(install binutils/);
  } finally {
    process.env.PATH = path;
    rmSync(empty, { recursive: true, force: true });
  }
});

test("the adapter batches the addresses it has not seen and caches per file", () => {
  const calls: { tool: string; args: readonly string[]; input: string }[] = [];
  const lines = new SourceLines("addr2line", (tool, args, input) => {
    calls.push({ tool, args, input });
    const addrs = input.trim().split("\n");
    return { stdout: addrs.map((a, k) => `${a}\nf${k}\n/src/a.c:${k + 1}\n`).join("") };
  });
  const first = lines.lookup("/bin/x", [0x10n, 0x20n, 0x10n]);
  assert.deepEqual(first, [
    [{ func: "f0", file: "/src/a.c", line: 1 }],
    [{ func: "f1", file: "/src/a.c", line: 2 }],
    [{ func: "f0", file: "/src/a.c", line: 1 }],
  ]);
  assert.equal(calls.length, 1);
  assert.deepEqual(calls[0]!.args, ["-e", "/bin/x", "-f", "-i", "-C", "-a"]);
  assert.equal(calls[0]!.input, "0x10\n0x20\n");
  assert.deepEqual(lines.lookup("/bin/x", [0x20n]), [[{ func: "f1", file: "/src/a.c", line: 2 }]]);
  assert.equal(calls.length, 1); // cached
  lines.lookup("/bin/x", [0x20n, 0x30n]);
  assert.equal(calls.at(-1)!.input, "0x30\n"); // only what is new
  lines.lookup("/bin/y", [0x20n]);
  assert.equal(calls.length, 3); // another file, another cache
  const failing = new SourceLines("addr2line", () => "addr2line exited with status 1: bad file");
  assert.equal(failing.lookup("/bin/x", [1n]), "addr2line exited with status 1: bad file");
  const short = new SourceLines("addr2line", () => ({ stdout: "0x1\nf\na.c:1\n" }));
  assert.match(String(short.lookup("/bin/x", [1n, 2n])), /answered 1 of 2 addresses/);
});

test("tool output parsing: discriminators, unknowns, inlining, llvm-symbolizer JSON", () => {
  const a2l = "0x1\nwork\n/s/p.c:7 (discriminator 3)\n0x2\n??\n??:0\n0x3\nsquare\n/s/p.c:3\nwork\n/s/p.c:?\n";
  assert.deepEqual(parseAddr2line(a2l, 3), [
    [{ func: "work", file: "/s/p.c", line: 7 }],
    [],
    [
      { func: "square", file: "/s/p.c", line: 3 },
      { func: "work", file: "/s/p.c", line: 0 },
    ],
  ]);
  const json = [
    '{"Address":"0x1","ModuleName":"p","Symbol":[{"FileName":"/s/p.c","FunctionName":"square","Line":3},{"FileName":"/s/p.c","FunctionName":"work","Line":7}]}',
    '{"Address":"0x5","ModuleName":"p","Symbol":[{"Column":0,"FileName":"","FunctionName":"","Line":0}]}',
    '{"Address":"0x6","Error":{"Message":"No such file or directory"},"ModuleName":"/nonexist"}',
    "{garbled",
  ].join("\n");
  assert.deepEqual(parseLlvmJson(json, 4), [
    [
      { func: "square", file: "/s/p.c", line: 3 },
      { func: "work", file: "/s/p.c", line: 7 },
    ],
    [],
    [],
    [],
  ]);
});

test("a large ELF file: its symbols from the parts read, the same names and offsets", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-symbols-parts-"));
  try {
    // Past the size from which ptkit reads only an ELF file's symbol parts (4 MiB).
    const bytes = madeElf("section", 2_000_000);
    assert.ok(bytes.length > 5 << 20);
    const exe = join(dir, "big");
    writeFileSync(exe, bytes);
    const all = await run(dir, "--no-lines", exe);
    assert.equal(all.code, 0, all.err);
    assert.equal(all.out, "0x0000000000401000 main\n0x0000000000401100 work\n0x0000000000402000 helper\n");
    const some = await run(dir, "--no-lines", exe, "0x401010", "0x401180", "0x402abc");
    assert.equal(some.code, 0, some.err);
    assert.deepEqual(
      some.out
        .trimEnd()
        .split("\n")
        .map((l) => l.split(" ").slice(0, 2).join(" ")),
      ["0x0000000000401010 main+0x10", "0x0000000000401180 ??", "0x0000000000402abc helper+0xabc"],
    );
    // A large file that is no ELF file: read whole, and said so as before.
    writeFileSync(join(dir, "zeros"), new Uint8Array(5 << 20));
    const bad = await run(dir, "--no-lines", join(dir, "zeros"));
    assert.equal(bad.code, 1);
    assert.match(bad.err, /not an ELF file/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
