/** The YAML subset that the deploy/ tests read manifests with: what it reads, what it refuses. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseYaml } from "./yaml-subset.js";

test("reads block mappings and sequences, quoted and plain scalars, flow lists of strings", () => {
  const doc = parseYaml(
    [
      "# a comment",
      "kind: Job # after a value",
      "spec:",
      "  n: 12",
      '  cpu: "1"',
      "  quoted: 'it''s # not a comment'",
      "  on: true",
      "  empty:",
      "  items:",
      "    - name: a",
      '      args: ["x", "-o", "/data/out"]',
      "    - plain",
      "  same-indent:",
      "  - 1",
      "  - k: v",
      "    deeper:",
      "      z: /a#b",
      "  after: end",
    ].join("\n"),
  );
  assert.deepEqual(doc, {
    kind: "Job",
    spec: {
      n: 12,
      cpu: "1",
      quoted: "it's # not a comment",
      on: true,
      empty: null,
      items: [{ name: "a", args: ["x", "-o", "/data/out"] }, "plain"],
      "same-indent": [1, { k: "v", deeper: { z: "/a#b" } }],
      after: "end",
    },
  });
});

test("refuses what it does not read, rather than misreading it", () => {
  for (const text of [
    "a: 1\n---\nb: 2",
    "a: &anchor 1",
    "a: {b: 1}",
    "a: |\n  text",
    "a: [plain, words]",
    "a: 1\na: 2",
    "a:\n    b: 1\n  c: 2",
    "a: 1\n\tb: 2",
  ])
    assert.throws(() => parseYaml(text), Error, JSON.stringify(text));
});
