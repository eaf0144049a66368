/**
 * readTasks, the process sideband `ptkit perf` replays: on the synthetic file with
 * one record of every kind, the address-space changes (COMM exec, MMAP2, FORK), the
 * switches each CPU sees (SWITCH out says nothing, SWITCH_CPU_WIDE in and
 * ITRACE_START name the thread), the threads seen running (COMM, MMAP2 sample ids),
 * the losses (AUX truncated, LOST), build ids and TSCs.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { bytesSource, PerfDataReader, perfTimeToTsc, readTasks } from "../../src/perf/index.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { sampleFile } from "./sample-file.js";

test("readTasks: changes, switches, gaps and build ids in time order", () => {
  const tasks = readTasks(new PerfDataReader(bytesSource(fileMode(sampleFile()))));
  assert.deepEqual(
    tasks.changes.map((c) => [c.kind, c.pid, c.time]),
    [
      ["exec", 100, 1000n],
      ["mmap", 100, 1001n],
      ["fork", 102, 1002n],
    ],
  );
  const mmap = tasks.changes[1]!;
  assert.ok(mmap.kind === "mmap");
  assert.deepEqual([mmap.addr, mmap.len, mmap.pgoff, mmap.path], [0x400000n, 0x1000n, 0n, "/bin/ls"]);
  assert.equal(tasks.buildIds.get("/bin/ls"), "0102030405060708090a0b0c0d0e0f1011121314");
  assert.deepEqual(
    tasks.switches.map((s) => [s.cpu, s.pid, s.tid, s.time]),
    [
      [3, 100, 101, 1004n],
      [2, 100, 101, 1006n],
    ],
  );
  // The file has switch records; COMM and MMAP2 show thread 101 of 100 running on CPU 2.
  assert.equal(tasks.hasSwitchRecords, true);
  assert.deepEqual(
    tasks.seen.map((s) => [s.cpu, s.pid, s.tid, s.time]),
    [
      [2, 100, 101, 1000n],
      [2, 100, 101, 1001n],
    ],
  );
  assert.deepEqual(
    tasks.gaps.map((g) => [g.cpu, g.time]),
    [
      [2, 1005n],
      [2, 1007n],
    ],
  );
  assert.match(
    tasks.gaps[0]!.what,
    /^trace lost: AUX truncated,partial at aux offset 0x2000 \(record at 0x[0-9a-f]+\)$/,
  );
  assert.match(tasks.gaps[1]!.what, /^3 sideband records lost/);
  // TIME_CONV's conversion, each record's TSC from it.
  assert.equal(tasks.conversion?.timeShift, 31);
  const tsc = perfTimeToTsc(1006n, tasks.conversion!)!;
  const sw = tasks.switches[1]!;
  assert.equal((BigInt(sw.tscHi >>> 0) << 32n) | BigInt(sw.tscLo >>> 0), tsc);
});
