/**
 * Against Linux perf itself, when it is installed and may record here: files
 * written by `perf record` (plain, zstd-compressed with -z, and piped through
 * stdout) list the same records (offset, size, type) as `perf report -D`.
 * Software events only, so no Intel PT hardware is needed.
 */
// test:quick skips this file: runs perf record.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { bytesSource, PerfDataReader, PerfRecord, RecordType, recordTypeName } from "../../src/perf/index.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Record `true` with perf; undefined when perf is missing or may not record. */
function perfRecord(name: string, extra: string[]): string | undefined {
  const out = join(dir, name);
  const pipe = extra.includes("-");
  const r = spawnSync(
    "perf",
    ["record", "-q", "-e", "cpu-clock", ...extra, ...(pipe ? [] : ["-o", out]), "--", "/bin/true"],
    {
      encoding: pipe ? "buffer" : "utf8",
      timeout: 20_000,
    },
  );
  if (r.status !== 0) return undefined;
  if (pipe) writeFileSync(out, r.stdout);
  return out;
}

const probe = perfRecord("probe.data", []);

/**
 * perf report -D's record lines as `offset size NAME`, sorted. In a pipe perf
 * counts offsets from after the 16-byte pipe header; ptkit gives file offsets.
 */
function perfLines(file: string, pipe: boolean): string[] {
  const r = spawnSync("perf", ["report", "-D", "-i", file], { encoding: "utf8", maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, r.stderr);
  const lines: string[] = [];
  for (const m of r.stdout.matchAll(
    /^(?:\S+ )?(0x[0-9a-f]+) \[(0x[0-9a-f]+)\]: PERF_RECORD_([A-Z0-9_]+)/gm,
  )) {
    if (m[3] === "FEATURE") continue; // HEADER_FEATURE, left out of ours too
    const offset = Number(m[1]) + (pipe ? 16 : 0);
    lines.push(`0x${offset.toString(16)} ${m[2]} ${m[3]}`);
  }
  return lines.sort();
}

function ourLines(file: string): string[] {
  const reader = new PerfDataReader(bytesSource(new Uint8Array(readFileSync(file))));
  const rec = new PerfRecord();
  const lines: string[] = [];
  while (reader.next(rec)) {
    // perf reports neither the compressed records themselves nor pipe-mode header records in -D.
    if (
      [
        RecordType.Compressed,
        RecordType.Compressed2,
        RecordType.HeaderAttr,
        RecordType.HeaderFeature,
      ].includes(rec.type as never)
    ) {
      continue;
    }
    lines.push(`0x${rec.offset.toString(16)} 0x${rec.size.toString(16)} ${recordTypeName(rec.type)}`);
  }
  assert.deepEqual(reader.diagnostics, []);
  return lines.sort();
}

describe("files written by perf record", {
  skip: probe ? false : "perf is not installed or may not record here",
}, () => {
  for (const [name, extra] of [
    ["plain.data", []],
    ["compressed.data", ["-z"]],
    ["piped.data", ["-o", "-"]],
  ] as const) {
    test(`${name}: the records perf report -D lists`, () => {
      const file = perfRecord(name, [...extra]);
      assert.ok(file);
      const theirs = perfLines(file, extra.includes("-" as never));
      // perf -D does not list every kind (e.g. HEADER_TRACING_DATA); compare what it lists.
      const ours = ourLines(file).filter((l) => !l.endsWith(" HEADER_TRACING_DATA"));
      assert.deepEqual(ours, theirs);
      assert.ok(theirs.length > 5);
    });
  }
});
