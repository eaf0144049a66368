/**
 * `ptkit perf` from the perf.data file alone: the HASE captures decode with their
 * binaries found by recorded path under --symfs (no --elf) to exactly what
 * `perf script` printed, instructions (reference/*.perf-script-insn.txt) and
 * branches (*.perf-script-branches.txt); JSON lines parse; a missing binary is
 * reported once; --time-range, --tid and --cpu cut; the build-id cache lookup order.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, test } from "node:test";
import { runPerf } from "../../src/cli/perf/perf.js";
import { BinaryFinder } from "../../src/session/perf-images.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { EMPTY_HOME } from "./home.js";
import { renameBinary } from "./rewrite.js";

const DIR = "real/hase";
const HOME = EMPTY_HOME;
const RUN_0515 = "2018-05/control_flow-20180515T180451";
const RUN_0514 = "2018-05/loopy-20180514T145114";
/** The 2018-04 captures' binaries are not under their recorded paths: a symfs of links is made for them. */
const RECORDED_0404 = "/home/joerg/git/angr/hase/tests/bin";
const symfs0404 = mkdtempSync(join(tmpdir(), "ptkit-perf-symfs-"));
after(() => rmSync(symfs0404, { recursive: true, force: true }));
const tmp = mkdtempSync(join(tmpdir(), "ptkit-perf-cmd-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

const CASES = [
  ["control_flow-20180404", "2018-04-04/control_flow/control_flow-20180404T163033.perf", symfs0404],
  ["loopy-20180404", "2018-04-04/loopy/loopy-20180404T162955.perf", symfs0404],
  ["control_flow-20180515", `${RUN_0515}/perf.data.1`, `${RUN_0515}/binaries`],
  ["loopy-20180514", `${RUN_0514}/perf.data.1`, `${RUN_0514}/binaries`],
] as const;

const skip = skipUnlessCorpus(DIR, "2018-04-04");
if (!skip) {
  for (const prog of ["control_flow", "loopy"]) {
    const link = join(symfs0404, RECORDED_0404, prog, prog);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(corpusPath(DIR, "2018-04-04", prog, prog)!, link);
  }
}

function run(args: string[]): { out: string; err: string; code: number } {
  const io = captureIo(corpusPath(DIR) ?? ".");
  const code = runPerf(args, io, HOME);
  return { out: io.out.join(""), err: io.err.join(""), code };
}

function reference(name: string): string[] {
  return readFileSync(corpusPath(DIR, "reference", name)!, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "");
}

describe("ptkit perf from the file alone", { skip }, () => {
  for (const [ref, perfData, symfs] of CASES) {
    test(`${ref}: perf script's instructions and branches`, () => {
      const r = run(["--symfs", symfs, perfData]);
      assert.equal(r.code, 0, r.err);
      assert.equal(r.err, "");
      const ours = r.out
        .split("\n")
        .filter((l) => l !== "" && !l.startsWith("["))
        .map((l) => BigInt(`0x${l}`));
      assert.deepEqual(
        ours,
        reference(`${ref}.perf-script-insn.txt`).map((l) => BigInt(`0x${l.trim()}`)),
      );
      const b = run(["--symfs", symfs, "--branches", perfData]);
      assert.equal(b.err, "");
      assert.deepEqual(
        b.out.split("\n").filter((l) => l !== ""),
        reference(`${ref}.perf-script-branches.txt`),
      );
    });
  }

  const [, perfData, symfs] = CASES[2];
  const jsonl = (extra: string[] = []) =>
    run(["--symfs", symfs, "--jsonl", ...extra, perfData])
      .out.split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  test("--jsonl: one object per line, with cpu, pid, tid and time", () => {
    const objects = jsonl();
    const insns = objects.filter((o) => o.type === "insn");
    assert.equal(insns.length, reference("control_flow-20180515.perf-script-insn.txt").length);
    for (const o of insns) {
      assert.equal(o.cpu, 1);
      assert.equal(o.pid, 11181);
      assert.equal(o.tid, 11181);
      assert.match(o.time as string, /^\d+\.\d{9}$/);
    }
    const branches = jsonl(["--calls"]).filter((o) => o.type === "branch");
    assert.ok(
      branches.length > 0 &&
        branches.every((o) => /^(call|return|tr strt|tr end.*)$/.test(o.flags as string)),
    );
  });

  test("--time-range cuts at perf times", () => {
    const insns = jsonl().filter((o) => o.type === "insn");
    const times = [...new Set(insns.map((o) => o.time as string))];
    assert.ok(times.length >= 4);
    // From just after the first time to just after the third (2 ns: perf times are rounded down): the second and third remain.
    const after = (t: string) => {
      const [s, ns] = t.split(".");
      return `${s}.${(Number(ns) + 2).toString().padStart(9, "0")}`;
    };
    const range = `${after(times[0]!)},${after(times[2]!)}`;
    const cut = jsonl(["--time-range", range]).filter((o) => o.type === "insn");
    assert.deepEqual(
      cut,
      insns.filter((o) => o.time === times[1] || o.time === times[2]),
    );
    assert.match(run(["--time-range", "1,2,3", perfData]).err, /--time-range: want <from>,<to>/);
  });

  test("--tid and --cpu of nothing traced: errors", () => {
    const tid = run(["--symfs", symfs, "--tid", "1", perfData]);
    assert.equal(tid.code, 1);
    assert.equal(tid.out, "");
    assert.match(
      tid.err,
      /^ptkit perf: --tid 1: .* never shows thread 1 running \(threads seen running: [\d, ]+, \.\.\. \(40 in all\)\)\.\n$/,
    );
    const cpu = run(["--symfs", symfs, "--cpu", "0", perfData]);
    assert.equal(cpu.code, 1);
    assert.equal(cpu.out, "");
    assert.match(cpu.err, /^ptkit perf: --cpu 0: no trace of CPU 0 in .* \(its trace is of CPU 1\)\.\n$/);
  });

  test("a binary that cannot be found is reported once, with the addresses that needed it", () => {
    // Recorded under a path that is certainly not there (the recorded one may be, where the tests run).
    const missing = join(tmp, "not-here", "control_flow");
    const file = join(tmp, "missing-binary.data");
    const bytes = new Uint8Array(readFileSync(corpusPath(DIR, perfData)!));
    writeFileSync(
      file,
      renameBinary(bytes, "/home/joerg/git/hase/tests/bin/control_flow/control_flow", missing),
    );
    const r = run([file]);
    assert.equal(r.code, 0);
    assert.ok(!/^\[[0-9a-f]+: /m.test(r.out), "no decode errors besides");
    assert.equal(r.err, `ptkit perf: warning: no binary for ${missing}: 6 addresses needed it.\n`);
  });
});

test("binary lookup order: --elf, the build-id cache, --symfs, the recorded path", () => {
  const id = "0123456789abcdef0123456789abcdef01234567";
  const finder = new BinaryFinder(
    captureIo("."),
    {
      elfs: [
        { name: "./build/prog", base: undefined },
        { name: "./other", base: undefined },
        // A base: loaded for every process, not looked up by name.
        { name: "./prog", base: 0x1000n },
      ],
      symfs: "/sys",
      buildIdDir: "/home/u/.debug",
    },
    new Map([["/usr/bin/prog", id]]),
  );
  assert.deepEqual(finder.candidates("/usr/bin/prog"), [
    "./build/prog",
    `/home/u/.debug/.build-id/01/${id.slice(2)}/elf`,
    `/home/u/.debug/.build-id/01/${id.slice(2)}`,
    `/home/u/.debug/usr/bin/prog/${id}/elf`,
    "/sys/usr/bin/prog",
    "/usr/bin/prog",
  ]);
  assert.deepEqual(finder.candidates("[vdso]"), []);
  assert.deepEqual(finder.candidates("//anon"), []);
});

const QUIPPER = "real/quipper-perf-data";
test("two CPUs' streams interleave in time order; each missing binary once", {
  skip: skipUnlessCorpus(QUIPPER, "perf.data.intel_pt-4.14"),
}, () => {
  // The dynamic linker recorded under a path that is certainly not there.
  const ld = join(tmp, "lib64", "ld-2.23.so");
  const bytes = new Uint8Array(readFileSync(corpusPath(QUIPPER, "perf.data.intel_pt-4.14")!));
  writeFileSync(join(tmp, "quipper.data"), renameBinary(bytes, "/lib64/ld-2.23.so", ld));
  const io = captureIo(tmp);
  assert.equal(runPerf(["--jsonl", "quipper.data"], io, HOME), 0);
  const objects = io.out
    .join("")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((o) => o.type !== "stream");
  const tscs = objects.map((o) => BigInt(o.tsc as string));
  assert.deepEqual(
    tscs,
    [...tscs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
  );
  assert.deepEqual(new Set(objects.map((o) => o.cpu)), new Set([0, 3]));
  assert.deepEqual(io.err.join("").split("\n").filter(Boolean), [
    "ptkit perf: warning: no binary for [kernel] (use --kcore or --vmlinux): 5 addresses needed it.",
    `ptkit perf: warning: no binary for ${ld} (build id a3f83cd3799ef4149d3763cee54dd18b967b7ddb): 5 addresses needed it.`,
  ]);
});
