/**
 * Every ptxed check of libipt's conformance suite, run as `ptkit flow` and compared
 * with the expected output like `diff -ub`. Each check runs once with --insn-decoder
 * and once with --block-decoder (both must match the same expected output); every
 * check must pass, the sideband (`--sb`/`--pevent`) ones included.
 *
 * One deviation of libipt's is allowed for: PWRE's HW bit (see {@link sdmPwre}).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { PacketDecoder } from "../../src/packet/decoder.js";
import { Flag, Packet, PacketType } from "../../src/packet/types.js";
import { skipUnlessCorpus } from "../corpus.js";
import { firstDifference, loadPttChecks, runCheck } from "./ptt.js";

const checks = loadPttChecks().filter((c) => c.tool === "ptxed");

/**
 * libipt's deviation: it reads and writes PWRE's HW as bit 3 of byte 2
 * (pt_pl_pwre_hw_mask 0x8), where the SDM (Vol. 3C Table 36-43) and perf have bit 7,
 * which ptkit follows. The suite's .pt files come from libipt's pttc, which never sets
 * bit 7: when no PWRE of the trace has it, no pwre event says hw.
 */
function sdmPwre(expected: string, trace: Uint8Array): string {
  const dec = new PacketDecoder(trace);
  const pkt = new Packet();
  for (let status = dec.syncSet(0); status >= 0; status = dec.syncForward()) {
    while (dec.next(pkt) >= 0) if (pkt.type === PacketType.Pwre && pkt.flags & Flag.Hw) return expected;
  }
  return expected.replace(/^\[pwre (c\d+\.\d+) hw\]$/gm, "[pwre $1]");
}

describe("ptxed conformance (corpus/ptt)", { skip: skipUnlessCorpus("ptt") }, () => {
  test("the suite has ptxed checks for both decoders, sideband ones included", () => {
    const insn = checks.filter((c) => c.argv.includes("--insn-decoder")).length;
    const block = checks.filter((c) => c.argv.includes("--block-decoder")).length;
    assert.ok(insn > 350 && block > 350, `found ${insn} insn-decoder and ${block} block-decoder checks`);
    const sideband = checks.filter((c) => c.argv.some((a) => a.startsWith("--pevent"))).length;
    assert.ok(sideband >= 18, `found only ${sideband} ptxed checks with sideband`);
  });

  for (const check of checks) {
    test(check.id, async () => {
      const pt = check.argv[check.argv.indexOf("--pt") + 1];
      let expected = readFileSync(check.exp, "utf8");
      if (check.argv.includes("--pt") && pt)
        expected = sdmPwre(expected, new Uint8Array(readFileSync(join(check.dir, pt))));
      const { stdout, stderr, code } = await runCheck(check);
      const diff = firstDifference(expected, stdout);
      assert.equal(diff, undefined, `${diff}\nstderr: ${stderr}`);
      assert.equal(code, 0, `exit code ${code}, stderr: ${stderr}`);
    });
  }
});
