/**
 * Every ptxed check of libipt's conformance suite, run as `ptkit flow` and compared
 * with the expected output like `diff -ub`. Each check runs once with --insn-decoder
 * and once with --block-decoder (both must match the same expected output). Checks
 * listed in KNOWN_FAILURES must still fail (so the list stays honest); every other
 * check must pass.
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

const checks = loadPttChecks().filter((c) => c.tool === "ptxed");

describe("ptxed conformance (corpus/ptt)", { skip: skipUnlessCorpus("ptt") }, () => {
  test("the suite has ptxed checks for both decoders", () => {
    const insn = checks.filter((c) => c.argv.includes("--insn-decoder")).length;
    const block = checks.filter((c) => c.argv.includes("--block-decoder")).length;
    assert.ok(insn > 350 && block > 350, `found ${insn} insn-decoder and ${block} block-decoder checks`);
  });

  for (const check of checks) {
    const known = KNOWN_FAILURES.find((k) => k.matches(check.argv));
    test(check.id, () => {
      const expected = readFileSync(check.exp, "utf8");
      const { stdout, stderr, code } = runCheck(check);
      const diff = firstDifference(expected, stdout);
      if (known) {
        assert.ok(
          diff !== undefined,
          `listed as a known failure (${known.reason}) but passes: remove it from the list`,
        );
        assert.notEqual(code, 0, "sideband options must be rejected");
        assert.match(stderr, /sideband/);
        return;
      }
      assert.equal(diff, undefined, `${diff}\nstderr: ${stderr}`);
      assert.equal(code, 0, `exit code ${code}, stderr: ${stderr}`);
    });
  }
});
