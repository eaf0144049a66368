/**
 * Every ptdump check of libipt's conformance suite, run as `ptkit dump` and compared
 * with the expected output like `diff -ub`; every check must pass, the sideband
 * (`--sb`/`--pevent`) ones included.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { skipUnlessCorpus } from "../corpus.js";
import { firstDifference, loadPttChecks, runCheck } from "./ptt.js";

const checks = loadPttChecks().filter((c) => c.tool === "ptdump");

describe("ptdump conformance (corpus/ptt)", { skip: skipUnlessCorpus("ptt") }, () => {
  test("the suite has ptdump checks, sideband ones included", () => {
    assert.ok(checks.length > 400, `found only ${checks.length} ptdump checks`);
    const sideband = checks.filter((c) => c.argv.some((a) => a.startsWith("--pevent")));
    assert.ok(sideband.length >= 11, `found only ${sideband.length} ptdump checks with sideband`);
  });

  for (const check of checks) {
    test(check.id, async () => {
      const expected = readFileSync(check.exp, "utf8");
      const { stdout, stderr } = await runCheck(check);
      const diff = firstDifference(expected, stdout);
      assert.equal(diff, undefined, `${diff}\nstderr: ${stderr}`);
    });
  }
});
