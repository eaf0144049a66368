/** `ptkit perf-dump`: listings, the Intel PT streams it writes, and bad files. */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { main } from "../../src/cli/ptkit.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { sampleFile } from "./sample-file.js";

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
/** A temporary directory, removed after the tests. */
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-dump-"));
  dirs.push(dir);
  return dir;
}

async function run(args: string[], cwd = process.cwd()): Promise<{ out: string; err: string; code: number }> {
  const io = captureIo(cwd);
  const code = await main(args, io);
  return { out: io.out.join(""), err: io.err.join(""), code };
}

const LOOPY = "real/hase/2018-04-04/loopy/loopy-20180404T162955.perf";

describe("ptkit perf-dump", () => {
  test("--help has usage and examples; the command is listed", async () => {
    const help = await run(["perf-dump", "--help"]);
    assert.equal(help.code, 0);
    assert.match(help.out, /^usage: ptkit perf-dump/);
    assert.match(help.out, /examples:\n {2}ptkit perf-dump perf.data/);
    assert.match((await run(["--help"])).out, /perf-dump +list a perf.data file.s records/);
  });

  test("a HASE capture: header, events, records, AUXTRACE_INFO and the stream it writes", {
    skip: skipUnlessCorpus(LOOPY),
  }, async () => {
    const dir = tempDir();
    const r = await run(["perf-dump", "--aux", "pt", corpusPath(LOOPY)!], dir);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.err, "");
    const lines = r.out.split("\n");
    assert.match(
      lines[0]!,
      /^# perf.data: file mode, 37756 bytes, header 104 bytes, .* data \[0x248, 0x3898\)$/,
    );
    assert.ok(lines.includes("# cpuid: GenuineIntel,6,94,3"));
    assert.ok(
      lines.some((l) =>
        /^# event 0: intel_pt\/\/u type=6 config=0x[0-9a-f]+ .*sample_type=IP\|TID\|TIME\|CPU\|IDENTIFIER .*ids=/.test(
          l,
        ),
      ),
    );
    assert.ok(
      lines.includes(
        "    decode with        --cpu 6/94/3 --mtc-freq 3 --nom-freq 32 --cpuid-0x15.eax 2 --cpuid-0x15.ebx 266",
      ),
    );
    assert.ok(
      lines.some((l) =>
        /^0x[0-9a-f]+ \[0x30\]: PERF_RECORD_AUXTRACE size=0x570 offset=0x0 reference=0x[0-9a-f]+ idx=2 tid=19233 cpu=2 data=0x[0-9a-f]+$/.test(
          l,
        ),
      ),
    );
    assert.ok(
      lines.some((l) =>
        /^0x[0-9a-f]+ \[0x[0-9a-f]+\]: PERF_RECORD_COMM pid=19233 tid=19233 comm=loopy exec \{pid\/tid=19233\/19233 time=\d+ cpu=2 id=\d+ event=dummy:u\}$/.test(
          l,
        ),
      ),
    );
    assert.ok(lines.includes("# aux idx 2 cpu 2 tid 19233: 1392 bytes in 1 buffers -> pt/aux-idx2.bin"));
    assert.deepEqual(
      readFileSync(join(dir, "pt", "aux-idx2.bin")),
      readFileSync(corpusPath("real/hase/reference/loopy-20180404-aux-idx2.bin")!),
    );
    // ptkit dump takes the stream as it is.
    const dump = await run(["dump", "--cpu", "6/94/3", "pt/aux-idx2.bin"], dir);
    assert.equal(dump.code, 0);
    assert.match(dump.out, /^0000000000000000 {2}psb/);
  });

  test("a cut-off file: problems where they occur, the rest listed", async () => {
    const dir = tempDir();
    const bytes = fileMode(sampleFile());
    writeFileSync(join(dir, "cut.data"), bytes.subarray(0, bytes.length - 200));
    const r = await run(["perf-dump", "cut.data"], dir);
    assert.equal(r.code, 0);
    assert.match(r.out, /^\[28: data section \[0x[0-9a-f]+, 0x[0-9a-f]+\) runs past the end of the file/m);
    assert.match(r.out, /^\[[0-9a-f]+: AUXTRACE payload of 30 bytes cut short: \d+ bytes in the file\]$/m);
    assert.match(r.out, /^# problems: \d+$/m);
    assert.match(r.out, /^# aux idx 0 cpu 0 tid 101: \d+ bytes in 2 buffers$/m);
  });

  const PEVENT = "real/dynamorio-drpt2trace/test_simple.raw/primary.sideband.pevent";
  test("--pevent: libipt sideband files", { skip: skipUnlessCorpus(PEVENT) }, async () => {
    const r = await run(["perf-dump", "--pevent", "0x10086", corpusPath(PEVENT)!]);
    assert.equal(r.code, 0, r.err);
    const lines = r.out.split("\n");
    assert.equal(lines[0], "# pevent sideband: 496 bytes of records, sample_type=TID|TIME|CPU|IDENTIFIER");
    assert.ok(
      lines.includes(
        "0x58 [0x38]: PERF_RECORD_COMM pid=223991 tid=223991 comm=hello exec {pid/tid=223991/223991 time=1385530563947414 cpu=9 id=881}",
      ),
    );
    assert.ok(lines.includes("# records: SWITCH=1 ITRACE_START=1 COMM=1 MMAP2=2 AUX=1 EXIT=1"));
    assert.match((await run(["perf-dump", "--pevent", "zz", "x"])).err, /--pevent: bad sample type: zz/);
  });

  test("not a perf.data file, a missing file, bad options", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "x"), "hello, world, this is text");
    const notPerf = await run(["perf-dump", "x"], dir);
    assert.equal(notPerf.code, 1);
    assert.equal(notPerf.err, "ptkit perf-dump: x: not a perf.data file: bad magic at offset 0x0\n");
    const missing = await run(["perf-dump", "nope"], dir);
    assert.equal(missing.code, 1);
    assert.equal(
      missing.err,
      `ptkit perf-dump: failed to open nope: no such file (looked for ${join(dir, "nope")}; the current directory is ${dir}).\n`,
    );
    assert.equal((await run(["perf-dump"], dir)).code, 1);
    assert.match((await run(["perf-dump", "--bogus", "x"], dir)).err, /Unknown option '--bogus'/);
  });
});
