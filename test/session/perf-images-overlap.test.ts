/**
 * ProcessImages where mmaps overlap, as Linux perf's maps have it: a later mmap
 * replaces what it overlaps, also when its binary is not here (then nothing is read
 * there: the dynamic loader reserves room for ld.so, and the libraries mapped over it
 * are theirs, not ld.so's); what every process has (--elf files no mmap names, in the
 * kernel image) stays; a missing binary's stops are charged to the latest mapping
 * there; a kernel address outside the file's kernel mmaps is in no file (an error
 * each time, as perf's "no map"), not the missing kernel's.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Image, ImageHit } from "../../src/image/index.js";
import { bytesSource, type PerfTasks, type TaskChange, type Timed } from "../../src/perf/index.js";
import { FilesIo } from "../../src/session/index.js";
import { BinaryFinder, KERNEL_NAME, ProcessImages } from "../../src/session/perf-images.js";

const PID = 7;

function mmap(tsc: number, pid: number, addr: number | bigint, len: number, path: string): Timed<TaskChange> {
  return {
    kind: "mmap",
    pid,
    addr: BigInt(addr),
    len: BigInt(len),
    pgoff: 0n,
    path,
    time: BigInt(tsc),
    tscHi: 0,
    tscLo: tsc,
  };
}

/** The process's images after `changes`, with a file of 0x90 bytes at /lib/here.so and a global file of 0xcc at 0x10000-0x20000. */
function images(changes: Timed<TaskChange>[]): { p: ProcessImages; needed: Map<string, number> } {
  const io = new FilesIo();
  io.add("/lib/here.so", bytesSource(new Uint8Array(0x4000).fill(0x90)));
  const kernel = new Image("kernel");
  kernel.addSection("global", new Uint8Array(0x10000).fill(0xcc), 0, 0x10000, 0, 0x10000);
  const tasks: PerfTasks = {
    changes,
    switches: [],
    hasSwitchRecords: false,
    seen: [],
    gaps: [],
    conversion: undefined,
    problems: [],
    buildIds: new Map(),
  };
  const finder = new BinaryFinder(io, { elfs: [], symfs: undefined, buildIdDir: undefined }, new Map());
  const needed = new Map<string, number>();
  const p = new ProcessImages(tasks, finder, kernel, false, needed);
  p.advance(0, 100);
  return { p, needed };
}

/** The byte process PID's image has at `addr`, or -1 for none. */
function byteAt(p: ProcessImages, addr: number): number {
  const hit = new ImageHit();
  if (p.image(PID).find(0, addr, hit) < 0) return -1;
  return hit.bytes[hit.offset]!;
}

test("a missing binary's mmap unmaps the code mapped there before, not the global files", () => {
  const { p } = images([
    mmap(1, PID, 0x30000, 0x3000, "/lib/here.so"),
    mmap(2, PID, 0x31000, 0x1000, "/lib/gone.so"),
    // Over part of the global file, a file here, then a missing one over part of both.
    mmap(3, PID, 0x14000, 0x2000, "/lib/here.so"),
    mmap(4, PID, 0x15000, 0x2000, "/lib/gone2.so"),
  ]);
  assert.equal(byteAt(p, 0x30800), 0x90);
  assert.equal(byteAt(p, 0x31800), -1, "the missing binary's range reads nothing");
  assert.equal(byteAt(p, 0x32800), 0x90);
  assert.equal(
    byteAt(p, 0x14800),
    0x90,
    "the file mapped over the global one stays outside the missing range",
  );
  assert.equal(byteAt(p, 0x15800), 0xcc, "the global file stays under the missing binary");
  assert.equal(byteAt(p, 0x16800), 0xcc);
  assert.equal(byteAt(p, 0x11000), 0xcc);
});

test("a stop is charged to the latest missing mapping there", () => {
  const { p, needed } = images([
    mmap(1, PID, 0x40000, 0x8000, "/lib/ld.so"),
    mmap(2, PID, 0x44000, 0x2000, "/lib/sel.so"),
  ]);
  assert.equal(p.charge(PID, 0, 0x44800), 1);
  assert.equal(p.charge(PID, 0, 0x41000), 1);
  assert.deepEqual(
    [...needed],
    [
      ["/lib/sel.so", 1],
      ["/lib/ld.so", 1],
    ],
  );
});

test("a kernel address outside the file's kernel mmaps is in no file", () => {
  const { p, needed } = images([
    mmap(1, -1, 0xffffffff81000000n, 0x1000000, "[kernel.kallsyms]_text"),
    mmap(1, -1, 0xffffffffc0000000n, 0x10000, "/lib/modules/x.ko"),
  ]);
  assert.equal(p.charge(PID, 0xffffffff, 0x81001000), 1);
  assert.equal(p.charge(PID, 0xffffffff, 0xc0000100), 2);
  assert.equal(p.charge(PID, 0xfffffe00, 0x0008a000), 0, "the entry trampoline");
  assert.deepEqual([...needed], [[KERNEL_NAME, 2]]);
});
