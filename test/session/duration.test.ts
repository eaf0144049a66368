/** Durations as the analysis options take them (--min-duration): a number and a unit. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseDuration } from "../../src/session/analysis-options.js";

test("a number with ns, us, µs, ms or s (none: nanoseconds); nothing else, nothing not above 0", () => {
  assert.equal(parseDuration("7"), 7);
  assert.equal(parseDuration("7ns"), 7);
  assert.equal(parseDuration("5us"), 5000);
  assert.equal(parseDuration("5µs"), 5000);
  assert.equal(parseDuration("5\u00b5s"), 5000);
  assert.equal(parseDuration("1.5ms"), 1_500_000);
  assert.equal(parseDuration("2s"), 2e9);
  for (const bad of ["", "0", "0.0001", "x", "5 us", "5Us", "-1", "5μs", "1e3"])
    assert.equal(parseDuration(bad), undefined, bad);
});
