/**
 * Every ptdump check of libipt's conformance suite, run as `ptkit dump` and compared
 * with the expected output like `diff -ub`. Checks listed in KNOWN_FAILURES must
 * still fail (so the list stays honest); every other check must pass.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { skipUnlessCorpus } from "../corpus.js";
import { firstDifference, loadPttChecks, runCheck } from "./ptt.js";

/** Checks that need features of a later layer, by reason. */
const KNOWN_FAILURES: Array<{ reason: string; matches: (argv: string[]) => boolean }> = [
  {
    reason: "perf_event sideband (--sb/--pevent options) belongs to the perf.data and sideband layer",
    matches: (argv) => argv.some((a) => a.startsWith("--sb") || a.startsWith("--pevent")),
  },
];

const checks = loadPttChecks().filter((c) => c.tool === "ptdump");

describe("ptdump conformance (corpus/ptt)", { skip: skipUnlessCorpus("ptt") }, () => {
  test("the suite has ptdump checks", () => {
    assert.ok(checks.length > 400, `found only ${checks.length} ptdump checks`);
  });

  for (const check of checks) {
    const known = KNOWN_FAILURES.find((k) => k.matches(check.argv));
    test(check.id, () => {
      const expected = readFileSync(check.exp, "utf8");
      const { stdout, stderr } = runCheck(check);
      const diff = firstDifference(expected, stdout);
      if (known) {
        assert.ok(
          diff !== undefined,
          `listed as a known failure (${known.reason}) but passes: remove it from the list`,
        );
        return;
      }
      assert.equal(diff, undefined, `${diff}\nstderr: ${stderr}`);
    });
  }
});
