/**
 * Every ptxed check of libipt's conformance suite, run as `ptkit flow` and compared
 * with the expected output like `diff -ub`. Each check runs once with --insn-decoder
 * and once with --block-decoder (both must match the same expected output); every
 * check must pass, the sideband (`--sb`/`--pevent`) ones included.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { skipUnlessCorpus } from "../corpus.js";
import { firstDifference, loadPttChecks, runCheck } from "./ptt.js";

const checks = loadPttChecks().filter((c) => c.tool === "ptxed");

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
      const expected = readFileSync(check.exp, "utf8");
      const { stdout, stderr, code } = await runCheck(check);
      const diff = firstDifference(expected, stdout);
      assert.equal(diff, undefined, `${diff}\nstderr: ${stderr}`);
      assert.equal(code, 0, `exit code ${code}, stderr: ${stderr}`);
    });
  }
});
