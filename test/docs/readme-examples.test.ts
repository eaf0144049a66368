/**
 * The README's library examples ("### The library") compile and run as written: each
 * TypeScript block is compiled (esbuild, as the build bundles the CLI), its `ptkit/...`
 * imports pointed at this build's layers, and run on the bundled sample with the few
 * names it leaves to the reader (`bytes`, `elfBytes`, `trace`, ...) defined; what the
 * examples say they make is checked.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { transform } from "esbuild";
import { REPO_ROOT } from "../corpus.js";

const SAMPLE = join(REPO_ROOT, "sample");
/** This build's layers (the compiled test runs from dist/test/docs). */
const LAYERS = new URL("../../src/", import.meta.url);

/** The TypeScript blocks of the README's library section. */
function libraryExamples(): string[] {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const from = readme.indexOf("### The library");
  const to = readme.indexOf("\n## ", from);
  assert.ok(from >= 0 && to > from, "the README has its library section");
  return [...readme.slice(from, to).matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/**
 * What the examples leave to the reader, from the bundled sample; `logged` collects
 * what they print. The example's own top-level names are read back through
 * `globalThis.readme`.
 */
function prelude(dir: string): string {
  const file = (name: string) => JSON.stringify(join(SAMPLE, name));
  return `
import { readFileSync as __read } from "node:fs";
const logged = [];
const console = { log: (...parts) => logged.push(parts.join(" ")) };
const bytes = new Uint8Array(__read(${file("sample.pt")}));
const trace = bytes;
const elfBytes = new Uint8Array(__read(${file("sample.elf")}));
const out = [];
globalThis.readme = { logged, out, dir: ${JSON.stringify(dir)} };
`;
}

/** Run one example; the names it defined that the checks read. */
async function run(code: string, dir: string, index: number): Promise<Record<string, unknown>> {
  const layers = (layer: string) => new URL(`${layer}/index.js`, LAYERS).href;
  const pointed = code.replace(/from "ptkit\/(\w+)"/g, (_, layer: string) => `from "${layers(layer)}"`);
  // Names each example makes that the checks look at (undefined where it has none).
  const keep = ["insns", "chunks", "analysis", "folded", "bytes"]
    .map((n) => `${n}: typeof ${n} === "undefined" ? undefined : ${n}`)
    .join(", ");
  const js = (
    await transform(`${prelude(dir)}\n${pointed}\nObject.assign(globalThis.readme, { ${keep} });\n`, {
      loader: "ts",
      format: "esm",
    })
  ).code;
  const path = join(dir, `example-${index}.mjs`);
  writeFileSync(path, js);
  await import(pathToFileURL(path).href);
  return (globalThis as unknown as { readme: Record<string, unknown> }).readme;
}

test("the README's library examples compile and run on the bundled sample as they say", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-readme-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const about = JSON.parse(readFileSync(join(SAMPLE, "sample.json"), "utf8"));
  const examples = libraryExamples();
  const uses = (i: number, what: string) => examples[i]!.includes(what);
  // The block decoder's, the call stacks', and the packets' examples are there.
  const blocks = examples.findIndex((e) => e.includes("new BlockDecoder("));
  const calls = examples.findIndex((e) => e.includes("new CallAnalysis("));
  const packets = examples.findIndex((e) => e.includes("new PacketDecoder("));
  assert.ok(blocks >= 0 && calls >= 0 && packets >= 0, "the examples are in the README");

  const p = await run(examples[packets]!, dir, packets);
  // It prints each TSC packet's offset and payload: the sample has some.
  assert.ok((p.logged as string[]).length > 0 && !(p.logged as string[]).some((l) => l.startsWith("[")));

  const b = await run(examples[blocks]!, dir, blocks);
  assert.equal(b.insns, about.execution.userMode.instructions);
  assert.ok(!(b.logged as string[]).some((l) => l.includes(" at ")), "no decode errors");

  assert.ok(uses(calls, "folded.write((chunk) => out.push(chunk)"));
  const c = await run(examples[calls]!, dir, calls);
  const text = (parts: unknown) => Buffer.concat(parts as Uint8Array[]).toString("utf8");
  // The timeline's chunks are Chrome trace-event JSON; the folded stacks have the line it shows.
  const timeline = JSON.parse(text(c.chunks)) as { traceEvents: { name: string }[] };
  assert.ok(timeline.traceEvents.some((e) => e.name === "fnv1a"));
  assert.ok(text(c.out).split("\n").includes("sample;_start;main;fnv1a 24007"), text(c.out).slice(0, 400));
});
