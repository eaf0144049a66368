/**
 * --time-range cuts between branches where the trace times them: with CYC and MTC
 * (the synthetic loop's trace) the instructions carry the time of the last timing
 * update, not just of the last event, and the range keeps exactly those inside it.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { runPerf } from "../../src/cli/perf/perf.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { captureIo } from "../conformance/ptt.js";
import { EMPTY_HOME } from "./home.js";
import { loopProgram, traceOf } from "./pt-file.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-range-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const BASE = 0x400000n;
const { code, exec } = loopProgram(BASE, 2000);
writeFileSync(join(dir, "loop"), code);
const file = new PtFile()
  .comm(100, "loop", TRACE_TSC - 100n)
  .mmap2(100, BASE, 0x1000n, 0n, "/bin/loop", TRACE_TSC - 50n)
  .itraceStart(100, 100, TRACE_TSC - 10n)
  .trace(traceOf(exec));
writeFileSync(join(dir, "perf.data"), fileMode(file.built()));

function insns(extra: string[]): Array<{ ip: string; tsc: bigint }> {
  const io = captureIo(dir);
  assert.equal(runPerf(["--jsonl", "--elf", "loop", ...extra, "perf.data"], io, EMPTY_HOME), 0);
  return io.out
    .join("")
    .split("\n")
    .filter((l) => l.includes('"type":"insn"'))
    .map((l) => JSON.parse(l) as { ip: string; tsc: string })
    .map((o) => ({ ip: o.ip, tsc: BigInt(o.tsc) }));
}

test("--time-range is exact to the timed branch", () => {
  const byEvents = new Set(insns([]).map((i) => i.tsc));
  const all = insns(["--time-range", ","]);
  assert.equal(all.length, 1 + 4 * 2000);
  const times = [...new Set(all.map((i) => i.tsc))];
  assert.ok(
    times.length > 20 * byEvents.size,
    `${times.length} times with ticks, ${byEvents.size} by events`,
  );
  const [from, to] = [times[10]!, times[30]!];
  const cut = insns(["--time-range", `${from},${to}`]);
  assert.deepEqual(
    cut,
    all.filter((i) => i.tsc >= from && i.tsc <= to),
  );
  assert.ok(cut.length > 0 && cut.length < all.length / 2);
});
