/**
 * Every ptdump check of libipt's conformance suite, run as `ptkit dump` and compared
 * with the expected output like `diff -ub`; every check must pass, the sideband
 * (`--sb`/`--pevent`) ones included.
 *
 * One deviation of libipt's is allowed for: PWRE's HW bit (see {@link sdmPwre}).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { skipUnlessCorpus } from "../corpus.js";
import { firstDifference, loadPttChecks, runCheck } from "./ptt.js";

const checks = loadPttChecks().filter((c) => c.tool === "ptdump");

/**
 * libipt's deviation: it reads and writes PWRE's HW as bit 3 of byte 2
 * (pt_pl_pwre_hw_mask 0x8), where the SDM (Vol. 3C Table 36-43) and perf have bit 7,
 * which ptkit follows. The suite's .pt files come from libipt's pttc (HW in bit 3), so
 * each expected pwre line says ", hw" as ptkit reads the byte: bit 7.
 */
function sdmPwre(expected: string, trace: Uint8Array): string {
  return expected.replace(
    /^([0-9a-f]{16})(\s+pwre\s+c\d+\.\d+)(, hw)?$/gm,
    (_line, offset: string, pwre: string) => {
      const hw = (trace[Number.parseInt(offset, 16) + 2] ?? 0) & 0x80;
      return `${offset}${pwre}${hw ? ", hw" : ""}`;
    },
  );
}

describe("ptdump conformance (corpus/ptt)", { skip: skipUnlessCorpus("ptt") }, () => {
  test("the suite has ptdump checks, sideband ones included", () => {
    assert.ok(checks.length > 400, `found only ${checks.length} ptdump checks`);
    const sideband = checks.filter((c) => c.argv.some((a) => a.startsWith("--pevent")));
    assert.ok(sideband.length >= 11, `found only ${sideband.length} ptdump checks with sideband`);
  });

  for (const check of checks) {
    test(check.id, async () => {
      const pt = check.argv.find((a) => a.endsWith(".pt"));
      let expected = readFileSync(check.exp, "utf8");
      if (pt) expected = sdmPwre(expected, new Uint8Array(readFileSync(join(check.dir, pt))));
      const { stdout, stderr } = await runCheck(check);
      const diff = firstDifference(expected, stdout);
      assert.equal(diff, undefined, `${diff}\nstderr: ${stderr}`);
    });
  }
});
