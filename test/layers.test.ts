/**
 * The architecture, checked: lower layers never import higher ones, and library
 * layers use no Node-only API (only src/cli touches files and processes).
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "node:test";
import { REPO_ROOT } from "./corpus.js";

/** Each layer and the layers it may import: every layer may import base, which imports nothing. */
const ALLOWED: Record<string, readonly string[]> = {
  base: [],
  packet: ["base"],
  cpu: ["base", "packet"],
  time: ["base", "packet", "cpu"],
  isa: ["base", "packet", "cpu"],
  image: ["base", "packet", "cpu"],
  event: ["base", "packet", "cpu", "time"],
  unit: ["base", "packet", "cpu", "time", "isa"],
  flow: ["base", "packet", "cpu", "time", "event", "isa", "image"],
  perf: ["base", "packet", "cpu", "time", "event", "isa", "image", "flow"],
  analysis: ["base", "packet", "cpu", "time", "event", "isa", "image", "flow", "perf"],
  shard: ["base", "packet", "cpu", "time", "event", "isa", "image", "flow", "perf", "analysis"],
  session: ["base", "packet", "cpu", "time", "event", "isa", "image", "flow", "perf", "analysis", "shard"],
  cli: [
    "base",
    "packet",
    "cpu",
    "time",
    "event",
    "isa",
    "image",
    "unit",
    "flow",
    "perf",
    "analysis",
    "shard",
    "session",
  ],
};
const NODE_ALLOWED = new Set(["cli"]);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

test("layers import only the layers below them, and library layers no node: modules", () => {
  const src = join(REPO_ROOT, "src");
  const problems: string[] = [];
  for (const file of sources(src)) {
    const layer = relative(src, file).split("/")[0]!;
    const allowed = ALLOWED[layer];
    if (!allowed) {
      problems.push(`${relative(REPO_ROOT, file)}: layer '${layer}' is not in the layer table`);
      continue;
    }
    for (const m of readFileSync(file, "utf8").matchAll(/from\s+"([^"]+)"/g)) {
      const spec = m[1]!;
      if (spec.startsWith("node:") || /^(fs|path|os|child_process|util|process|buffer)$/.test(spec)) {
        if (!NODE_ALLOWED.has(layer)) problems.push(`${relative(REPO_ROOT, file)}: imports ${spec}`);
        continue;
      }
      if (!spec.startsWith(".")) continue;
      const target = relative(src, resolve(dirname(file), spec)).split("/")[0]!;
      if (target !== layer && !allowed.includes(target)) {
        problems.push(`${relative(REPO_ROOT, file)}: layer '${layer}' imports '${target}'`);
      }
    }
  }
  assert.deepEqual(problems, []);
});
