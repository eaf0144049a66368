/**
 * The libxdc harness builder (tools/libxdc/harness.ts) without libxdc: libxdc is
 * optional, so a missing build is a skip that says what is missing and how to get it,
 * never an error. The harness itself against a stand-in for libxdc written here (the
 * real one only in the benchmark and bench/libxdc-edges.ts).
 */
// test:quick skips this file: compiles the libxdc harness against a stand-in with cc.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { buildLibxdcHarness, LIBXDC_ENV, libxdcArgv } from "../../tools/libxdc/harness.js";
import { stubLibxdc } from "./libxdc-stub.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-libxdc-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("no libxdc named: a skip naming the variable and where the build steps are", () => {
  const b = buildLibxdcHarness(join(dir, "out"), "");
  assert.ok("skip" in b, JSON.stringify(b));
  assert.match(b.skip, new RegExp(`^${LIBXDC_ENV} is not set`));
  assert.match(b.skip, /tools\/libxdc\/harness\.ts/);
});

test("a directory without a libxdc build: a skip naming the missing file", () => {
  const empty = mkdtempSync(join(dir, "empty-"));
  const none = buildLibxdcHarness(join(dir, "out"), empty);
  assert.ok("skip" in none, JSON.stringify(none));
  assert.ok(none.skip.includes(join(empty, "libxdc.a")), none.skip);

  // The header alone is not enough either.
  writeFileSync(join(empty, "libxdc.h"), "");
  const headerOnly = buildLibxdcHarness(join(dir, "out"), empty);
  assert.ok(
    "skip" in headerOnly && headerOnly.skip.includes("libxdc.a is missing"),
    JSON.stringify(headerOnly),
  );
  writeFileSync(join(empty, "libxdc.a"), "");
  rmSync(join(empty, "libxdc.h"));
  const libOnly = buildLibxdcHarness(join(dir, "out"), empty);
  assert.ok("skip" in libOnly && libOnly.skip.includes("libxdc.h is missing"), JSON.stringify(libOnly));
});

test("the harness's command line: maps, the filter, runs or the edges mode, the trace last", () => {
  assert.deepEqual(libxdcArgv("h", ["a:0x80-0x100:0x400000", "b:0x1000"], "0x400000-0x400fff", "t.pt", 20), [
    "h",
    "--map",
    "a:0x80-0x100:0x400000",
    "--map",
    "b:0x1000",
    "--filter",
    "0x400000-0x400fff",
    "--runs",
    "20",
    "t.pt",
  ]);
  assert.deepEqual(libxdcArgv("h", [], "1-2", "t.pt", "edges"), ["h", "--filter", "1-2", "--edges", "t.pt"]);
});

/*
 * The harness itself, against the stand-in (libxdc-stub.ts). Needs cc (and capstone,
 * which the harness links): a skip without them.
 */
const stub = stubLibxdc(dir);
const stubBuild = typeof stub === "string" ? buildLibxdcHarness(join(dir, "stub-out"), stub) : stub;
if ("error" in stubBuild) throw new Error(stubBuild.error);
const stubSkip = "skip" in stubBuild ? stubBuild.skip : false;
const harness = "bin" in stubBuild ? stubBuild.bin : "";

/** 8-byte little-endian addresses. */
function addresses(...as: number[]): Uint8Array {
  const out = new Uint8Array(8 * as.length);
  const v = new DataView(out.buffer);
  for (const [i, a] of as.entries()) v.setBigUint64(8 * i, BigInt(a), true);
  return out;
}

function runHarness(args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(harness, args, { encoding: "utf8" });
}

test("the harness serves libxdc pages from --map file ranges and reports runs, bitmap and result", {
  skip: stubSkip,
}, () => {
  // Code file: bytes 0x100.. are mapped at 0x401000 (a range of the file), all of
  // `data` at 0x7f0000001ff8 (across a page boundary).
  const code = new Uint8Array(0x2000).map((_, i) => (i * 7) & 0xff);
  writeFileSync(join(dir, "code.bin"), code);
  const data = Uint8Array.of(11, 22, 33, 44, 55, 66, 77, 88, 99, 111, 122, 133, 144, 155, 166, 177);
  writeFileSync(join(dir, "data.bin"), data);
  const maps = [
    "--map",
    `${join(dir, "code.bin")}:0x100-0x1100:0x401000`,
    "--map",
    `${join(dir, "data.bin")}:0x7f0000001ff8`,
  ];
  const filters = ["--filter", "0x401000-0x401fff", "--filter", "0x7f0000001ff8-0x7f0000002007"];
  // The ends of both filter ranges are in them (libxdc's ranges exclude their ends).
  const trace = join(dir, "t.bin");
  writeFileSync(
    trace,
    addresses(0x401000, 0x401fff, 0x401005, 0x7f0000001ff8, 0x7f0000002007, 0x7f0000002000),
  );
  const r = runHarness([...maps, ...filters, "--runs", "3", trace]);
  assert.equal(r.status, 0, r.stderr);
  const j = JSON.parse(r.stdout) as Record<string, unknown>;
  assert.equal(j.result, "success");
  assert.equal(j.bytes, 48);
  assert.equal(j.runs, 3);
  assert.equal((j.runs_ns as number[]).length, 3);
  assert.equal((j.runs_cpu_ns as number[]).length, 3);
  assert.equal(j.best_ns, Math.min(...(j.runs_ns as number[])));
  // The bytes the stand-in found: code[0x100], code[0x10ff], code[0x105], data[0], data[15], data[8].
  const seen = new Set([code[0x100], code[0x10ff], code[0x105], 11, 177, 99]);
  assert.equal(j.bitmap_nonzero, seen.size, "the bitmap is reset before each run");

  const e = runHarness([...maps, ...filters, "--edges", trace]);
  assert.equal(e.status, 0, e.stderr);
  const want = [
    [0x401000, code[0x100]!],
    [0x401fff, code[0x10ff]!],
    [0x401005, code[0x105]!],
    [0x7f0000001ff8, 11],
    [0x7f0000002007, 177],
    [0x7f0000002000, 99],
  ].map(([a, b]) => `E 0x${a!.toString(16)} 0x${b!.toString(16)}`);
  const lines = e.stdout.trim().split("\n");
  assert.equal(lines.pop(), "R success");
  assert.deepEqual(lines.sort(), want.sort());

  // Outside the filter: libxdc's error; outside the maps: a page fault; both exit 1.
  writeFileSync(trace, addresses(0x402000));
  const out = runHarness([...maps, ...filters, trace]);
  assert.equal(out.status, 1);
  assert.equal(JSON.parse(out.stdout).result, "error");
  const unmapped = runHarness([...maps, "--filter", "0x401000-0x402fff", trace]);
  assert.equal(unmapped.status, 1);
  assert.equal(JSON.parse(unmapped.stdout).result, "page_fault");
});

test("the harness's edges mode lists each distinct edge once, however many", { skip: stubSkip }, () => {
  // 5000 addresses, 3000 distinct (the set grows many times), over one 4 KiB page of code.
  const code = new Uint8Array(0x1000).map((_, i) => i & 0xff);
  writeFileSync(join(dir, "page.bin"), code);
  const as = Array.from({ length: 5000 }, (_, i) => 0x500000 + (i % 3000));
  const trace = join(dir, "many.bin");
  writeFileSync(trace, addresses(...as));
  const e = runHarness([
    "--map",
    `${join(dir, "page.bin")}:0x500000`,
    "--filter",
    "0x500000-0x500fff",
    "--edges",
    trace,
  ]);
  assert.equal(e.status, 0, e.stderr);
  const lines = e.stdout.trim().split("\n").slice(0, -1);
  assert.equal(lines.length, 3000);
  assert.equal(new Set(lines).size, 3000);
  assert.ok(lines.includes(`E 0x500bb7 0x${(0xbb7 & 0xff).toString(16)}`));
});
