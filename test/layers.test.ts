/**
 * The architecture, checked: lower layers never import higher ones; library layers
 * use no Node-only API (only the Node adapters in src/node and the CLI touch files and
 * processes); the benchmarks, the tools and the web app use the library, not the CLI.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "node:test";
import { REPO_ROOT } from "./corpus.js";

/** Every library layer: what the Node adapters may import. */
const LIBRARY = [
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
] as const;

/** Each layer and the layers it may import: every layer may import base, which imports nothing. */
const ALLOWED: Record<string, readonly string[]> = {
  base: [],
  packet: ["base"],
  cpu: ["base", "packet"],
  time: ["base", "packet", "cpu"],
  isa: ["base", "packet", "cpu"],
  image: ["base", "packet", "cpu"],
  event: ["base", "packet", "cpu", "time"],
  unit: ["base", "packet", "cpu", "time", "isa", "image"],
  flow: ["base", "packet", "cpu", "time", "event", "isa", "image"],
  perf: ["base", "packet", "cpu", "time", "event", "isa", "image", "flow"],
  analysis: ["base", "packet", "cpu", "time", "event", "isa", "image", "flow", "perf"],
  shard: ["base", "packet", "cpu", "time", "event", "isa", "image", "flow", "perf", "analysis"],
  session: ["base", "packet", "cpu", "time", "event", "isa", "image", "flow", "perf", "analysis", "shard"],
  node: LIBRARY,
  cli: [...LIBRARY, "node"],
};
const NODE_ALLOWED = new Set(["node", "cli"]);

/** A module a file imports: statically (`from "…"`) or on demand (`import("…")`). */
const IMPORT = /(?:from\s+|import\s*\(\s*)"([^"]+)"/g;

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
    for (const m of readFileSync(file, "utf8").matchAll(IMPORT)) {
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

/**
 * What each folder outside src may import from it. The benchmarks measure the library
 * and the web app runs it, so neither reaches into the CLI; of the tools, only the
 * fuzzer and the sample regenerator, whose subject is the command itself, run it, and
 * only through its entry (src/cli/ptkit.ts: `runCli`, `main`), and the build, which
 * bundles the CLI, reads which commands go into the executable's CommonJS bundle
 * (src/cli/bundled-commands.ts).
 */
const OUTSIDE: Record<string, { web: boolean; cli: readonly string[] }> = {
  bench: { web: false, cli: [] },
  tools: { web: false, cli: ["cli/ptkit.js", "cli/bundled-commands.js"] },
  web: { web: true, cli: [] },
};

test("benchmarks, tools and the web app use the library, not the CLI; the web app nothing of Node", () => {
  const src = join(REPO_ROOT, "src");
  const problems: string[] = [];
  for (const [dir, rule] of Object.entries(OUTSIDE)) {
    for (const file of sources(join(REPO_ROOT, dir))) {
      for (const m of readFileSync(file, "utf8").matchAll(IMPORT)) {
        const spec = m[1]!;
        const where = relative(REPO_ROOT, file);
        if (rule.web && (spec.startsWith("node:") || /^(fs|path|os|child_process|util)$/.test(spec)))
          problems.push(`${where}: imports ${spec}`);
        if (!spec.startsWith(".")) continue;
        const target = relative(src, resolve(dirname(file), spec));
        if (target.startsWith("..")) continue;
        const layer = target.split("/")[0]!;
        if (layer === "cli" && !rule.cli.includes(target)) problems.push(`${where}: imports src/${target}`);
        if (rule.web && NODE_ALLOWED.has(layer)) problems.push(`${where}: imports src/${target}`);
      }
    }
  }
  assert.deepEqual(problems, []);
});
