/**
 * `ptkit simulate --env perf-user` against DynamoRIO's drpt2trace test capture
 * (issue 16 item 3): `test_simple.tracedir-2aad718/hello`, a static glibc "Hello,
 * World!", traced on Skylake-SP (family 6 model 85) by `perf record` with CYC, MTC
 * (MTCFreq 3), TSC and User only: the capture starts with perf's exec-time enable (a
 * PSB+ without MODE.Exec or FUP, then MODE.Exec and TIP.PGE at the entry point
 * 0x4016a0), like the HASE captures. The program is run under valgrind with the
 * capture's settings (`--cpu skylakeSp --user --tsc --mtc 3 --cyc 0 --psb-freq 3`;
 * the capture has a CYC before every MTC: threshold 0) and the packet streams are
 * compared with the timing packets and PAD left out (test/real/packet-list.ts).
 *
 * Equal for the first 34 packets: exec's enable, the page faults at the entry point
 * (code), at 0x4027a8 and 0x4027af (stores to .bss and .data), the envp walk's 80
 * TNT bits, the faults at 0x4469f0 (code), 0x446a22 (a load from .data). The 35th
 * packet is the first the program's environment changes: glibc's auxv walk
 * (`_dl_aux_init`), where the capture's first auxv entry goes straight to the jump
 * table (`ja` at 0x446ac8 not taken: TNT "0") and valgrind's auxv (built from the
 * host kernel's) sends its first entries to the default case first (on the host this
 * was measured on, two: TNT "11110"). Past that point the page
 * faults still line up: the first 13 are at the same instructions (and on the host
 * this was measured on, both have 19).
 * The rest differ where glibc picks functions by CPUID, which valgrind changes. In
 * the 34 equal packets the CYCs are in the same places too (a CYC before each MTC,
 * also in exec's kernel time; before each TIP.PGD and each TIP.PGE back from the
 * kernel; none before the faults' FUPs).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { main } from "../../src/cli/ptkit.js";
import { valgrindVersion } from "../../src/node/valgrind.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { faultFups, firstDifference, packetList, packetsWithCyc } from "./packet-list.js";

const TRACEDIR = ["real", "dynamorio-drpt2trace", "test_simple.tracedir-2aad718"] as const;

const skip =
  skipUnlessCorpus(...TRACEDIR, "hello") ||
  skipUnlessCorpus(...TRACEDIR, "pt.bin") ||
  (valgrindVersion() === undefined && "valgrind is not installed");

describe("ptkit simulate --env perf-user against DynamoRIO's hello capture, timing packets aside", {
  skip,
}, () => {
  test("equal up to glibc's auxv walk, which the environment changes; the same page faults before and after", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ptkit-dynamorio-"));
    const program = join(dir, "hello");
    copyFileSync(corpusPath(...TRACEDIR, "hello")!, program);
    spawnSync("chmod", ["+x", program]);
    const trace = join(dir, "hello.pt");
    const io = captureIo(dir);
    // glibc walks envp before auxv: the capture's walk has 80 entries; under valgrind
    // PATH and 74 more make as many (found by trying counts).
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH };
    for (let k = 1; k <= 74; k++) env[`PTKIT_PAD${k}`] = "x";
    const saved = process.env;
    process.env = env;
    let code: number;
    try {
      code = await main(
        [
          "simulate",
          ...["--cpu", "skylakeSp", "--env", "perf-user", "--user", "--tsc"],
          ...["--mtc", "3", "--cyc", "0", "--psb-freq", "3", "-o", trace, "--", program],
        ],
        io,
      );
    } finally {
      process.env = saved;
    }
    assert.equal(code, 0, io.err.join(""));
    // On the host this was measured on: 9 code and 10 data page faults (the count past
    // the first 13 depends on the functions glibc picks by valgrind's CPUID).
    assert.match(io.out.join(""), /perf-user: \d+ code page faults, \d+ data page faults, 1 TraceEn toggles/);

    const got = packetList(new Uint8Array(readFileSync(trace))).packets;
    const capture = packetList(new Uint8Array(readFileSync(corpusPath(...TRACEDIR, "pt.bin")!)));
    const want = capture.packets;
    assert.equal(want.length, 3217);
    const at = firstDifference(got, want);
    assert.equal(at, 34);
    assert.deepEqual(got.slice(0, 13), [
      "psb 0 0 0:0",
      "psbend 0 0 0:0",
      "mode.exec 0 0 0:0",
      "tip.pge 3 0 0:4016a0",
      "fup 3 0 0:4016a0",
      "tip.pgd 0 0 0:0",
      "tip.pge 1 0 0:16a0",
      "fup 3 0 0:4027a8",
      "tip.pgd 0 0 0:0",
      "tip.pge 1 0 0:27a8",
      "fup 3 0 0:4027af",
      "tip.pgd 0 0 0:0",
      "tip.pge 1 0 0:27af",
    ]);
    // The first difference: the capture's byte offset, both packets.
    assert.equal(capture.offsets[at], 0x856);
    assert.equal(want[at], "tnt.8 1 0 0:0");
    // Valgrind's auxv comes from the host kernel's (here its first two entries go to
    // the default case: TNT 11110): only that it is a TNT is fixed.
    assert.match(got[at]!, /^tnt\.8 /);
    // Both then fault at the jump table's load (.rodata), and go on faulting alike.
    assert.equal(want[at + 1], "fup 3 0 0:446aca");
    assert.equal(got[at + 1], "fup 3 0 0:446aca");
    const wantFaults = faultFups(want);
    const gotFaults = faultFups(got);
    assert.equal(wantFaults.length, 19);
    assert.ok(gotFaults.length >= 13);
    assert.deepEqual(gotFaults.slice(0, 13), wantFaults.slice(0, 13));
    // Cycle-accurate mode: the same packets get a CYC right before them in the first 34
    // (MODE.Exec, TIP.PGD, each TIP.PGE back from the kernel and TNT; no FUP).
    const cycWant = packetsWithCyc(new Uint8Array(readFileSync(corpusPath(...TRACEDIR, "pt.bin")!)));
    const cycGot = packetsWithCyc(new Uint8Array(readFileSync(trace)));
    assert.deepEqual(cycGot.slice(0, at), cycWant.slice(0, at));
    assert.equal(cycWant.slice(0, at).filter((l) => l.startsWith("cyc tip.pge")).length, 5);
  });
});
