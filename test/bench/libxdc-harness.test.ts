/**
 * The libxdc harness builder (tools/libxdc/harness.ts) without libxdc: libxdc is
 * optional, so a missing build is a skip that says what is missing and how to get it,
 * never an error. (The harness itself is exercised with a real libxdc only, in the
 * benchmark and bench/libxdc-edges.ts.)
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { buildLibxdcHarness, LIBXDC_ENV, libxdcArgv } from "../../tools/libxdc/harness.js";

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
