/**
 * The library layers run in a browser: the bundle of tools/browser/bundle.ts, served
 * from 127.0.0.1 and loaded by headless Chromium, decodes traces (packets, and
 * instructions from an ELF image through iced-x86's WebAssembly) exactly as Node does,
 * demangles names with the analysis layer's Demangler, and writes Parquet as Node does.
 */
// test:quick skips this file: runs headless Chromium.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser } from "playwright-core";
import { BUNDLE_ASSETS, bundleLibrary } from "../../tools/browser/bundle.js";
import {
  CHROMIUM_SKIP,
  launchChromium,
  type ServedFile,
  type StaticServer,
  servedFile,
  serveFiles,
} from "../../tools/browser/chromium.js";
import * as ptkit from "../../tools/browser/ptkit.js";
import { REPO_ROOT } from "../corpus.js";
import { tracedProgram } from "./program.js";
import { type DecodeSummary, decodeSummary } from "./summary.js";

const SAMPLE_DIR = join(REPO_ROOT, "sample");
const SAMPLE_SKIP = existsSync(join(SAMPLE_DIR, "sample.json"))
  ? false
  : `no bundled sample in ${SAMPLE_DIR}`;

const ITERATIONS = 1000;
const MANGLED = ["_ZNSt6vectorIiSaIiEE9push_backERKi", "_ZN3foo3barE", "_RNvCs1234_7mycrate3foo", "main"];

/**
 * The page decodes `?pt=...&elf=...` with the bundle and the summary function and
 * demangles MANGLED, and leaves `{ summary, demangled }` (or `{ failure }`) in
 * `window.result`.
 */
const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>ptkit in the browser</title>
<link rel="icon" href="data:,">
<pre id="out">decoding...</pre>
<script type="module">
const out = document.getElementById("out");
try {
  const ptkit = await import("./ptkit.js");
  const { decodeSummary } = await import("./summary.js");
  const bytes = async (name) => new Uint8Array(await (await fetch(name)).arrayBuffer());
  const query = new URLSearchParams(location.search);
  const summary = decodeSummary(ptkit, await bytes(query.get("pt")), await bytes(query.get("elf")));
  const demangler = await ptkit.analysis.Demangler.instantiate(await bytes("gecko-profiler-demangle.wasm"));
  const demangled = ${JSON.stringify(MANGLED)}.map((name) => demangler.demangle(name));
  out.textContent = summary.packets + " packets, " + summary.insns + " instructions";
  window.result = { summary, demangled };
} catch (e) {
  window.result = { failure: String(e && e.stack || e) };
}
</script>
`;

describe("library layers in headless Chromium", { skip: CHROMIUM_SKIP }, () => {
  const program = tracedProgram(ITERATIONS);
  let server: StaticServer;
  let browser: Browser;

  before(async () => {
    const { code } = await bundleLibrary();
    const files = new Map<string, ServedFile>([
      ["/", servedFile("index.html", PAGE)],
      ["/ptkit.js", servedFile("ptkit.js", code)],
      // summary.js is compiled beside this file and has no imports: the page loads it as is.
      ["/summary.js", servedFile("summary.js", readFileSync(new URL("./summary.js", import.meta.url)))],
      ["/program.pt", servedFile("program.pt", program.trace)],
      ["/program.elf", servedFile("program.elf", program.elf)],
    ]);
    for (const [name, path] of Object.entries(BUNDLE_ASSETS))
      files.set(`/${name}`, servedFile(name, readFileSync(path)));
    if (!SAMPLE_SKIP) {
      for (const name of ["sample.pt", "sample.elf"])
        files.set(`/${name}`, servedFile(name, readFileSync(join(SAMPLE_DIR, name))));
    }
    files.set("/example.html", servedFile("example.html", docsExample()));
    server = await serveFiles(files);
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  /** The page's result for a trace and its ELF, failing on any page error. */
  async function inPage(pt: string, elf: string): Promise<{ summary: DecodeSummary; demangled: string[] }> {
    const page = await browser.newPage();
    try {
      const problems: string[] = [];
      page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
      page.on("console", (m) => {
        if (m.type() === "error") problems.push(`console: ${m.text()}`);
      });
      await page.goto(`${server.url}?pt=${pt}&elf=${elf}`);
      await page.waitForFunction(() => "result" in globalThis, undefined, { timeout: 20_000 });
      const result = await page.evaluate(() => (globalThis as unknown as { result: object }).result);
      assert.deepEqual(problems, []);
      if ("failure" in result) assert.fail(`the page failed: ${result.failure}`);
      const { summary } = result as { summary: DecodeSummary };
      assert.equal(
        await page.textContent("#out"),
        `${summary.packets} packets, ${summary.insns} instructions`,
      );
      return result as { summary: DecodeSummary; demangled: string[] };
    } finally {
      await page.close();
    }
  }

  test("decodes a program traced by the trace unit as Node does, and demangles", async () => {
    const node = decodeSummary(ptkit, program.trace, program.elf);
    // The Node decode is right: every instruction the program ran, no errors.
    assert.deepEqual(node.errors, []);
    assert.equal(node.insns, ITERATIONS * 8 - Math.ceil(ITERATIONS / 3));
    assert.equal(node.first, "401000: call 0x401010");
    assert.equal(node.last, "401009: je 0x401000");
    assert.ok(node.packetLines.some((l) => l.endsWith("tsc")));

    const browserResult = await inPage("program.pt", "program.elf");
    assert.deepEqual(browserResult.summary, node);

    const demangler = await ptkit.analysis.Demangler.instantiate(
      readFileSync(BUNDLE_ASSETS["gecko-profiler-demangle.wasm"]!),
    );
    const expected = MANGLED.map((name) => demangler.demangle(name));
    assert.equal(expected[0], "std::vector<int, std::allocator<int> >::push_back(int const&)");
    assert.deepEqual(browserResult.demangled, expected);
  });

  test("the shard layer runs in the page: the same Parquet bytes and plan ids as in Node", async () => {
    const columns = [
      { name: "function", type: "string" as const },
      { name: "self_insns", type: "int64" as const },
      { name: "from", type: "uint64" as const },
    ];
    const values = [
      ["main", "f\u00e9", ""],
      [1, 2, 3],
      [0xffffffff81000000n, 0n, 1n],
    ];
    const node = ptkit.shard.writeParquet(columns, values);
    const nodeId = ptkit.shard.planId({ options: ["--elf", "x"], inputs: [], shards: [] });
    const page = await browser.newPage();
    try {
      await page.goto(`${server.url}?pt=program.pt&elf=program.elf`);
      const got = await page.evaluate(async (url) => {
        const lib = (await import(url)) as typeof ptkit;
        const bytes = lib.shard.writeParquet(
          [
            { name: "function", type: "string" },
            { name: "self_insns", type: "int64" },
            { name: "from", type: "uint64" },
          ],
          [
            ["main", "f\u00e9", ""],
            [1, 2, 3],
            [0xffffffff81000000n, 0n, 1n],
          ],
        );
        return {
          bytes: Array.from(bytes),
          id: lib.shard.planId({ options: ["--elf", "x"], inputs: [], shards: [] }),
        };
      }, new URL("/ptkit.js", server.url).href);
      assert.deepEqual(got.bytes, Array.from(node));
      assert.equal(got.id, nodeId);
    } finally {
      await page.close();
    }
  });

  test("the page in docs/browser.md runs as written, to its end", { skip: SAMPLE_SKIP }, async () => {
    const about = JSON.parse(readFileSync(join(SAMPLE_DIR, "sample.json"), "utf8"));
    const trace = readFileSync(join(SAMPLE_DIR, "sample.pt"));
    const elf = readFileSync(join(SAMPLE_DIR, "sample.elf"));
    const node = decodeSummary(ptkit, trace, elf);
    // The first five instructions as the page prints them, decoded here in Node.
    const img = new ptkit.image.Image("sample");
    img.addElf(ptkit.image.parseElf(elf));
    const first: string[] = [];
    ptkit.flow.drive(new ptkit.flow.InsnDecoder(trace, { image: img }), new ptkit.flow.Insn(), {
      record: (insn) => {
        if (first.length < 5)
          first.push(
            `${insn.ip.toString(16)} ${ptkit.isa.formatInsn(insn.raw, 0, insn.ipHi, insn.ipLo, insn.mode as ptkit.isa.ExecMode)}`,
          );
      },
    });
    const page = await browser.newPage();
    try {
      const logged: string[] = [];
      const problems: string[] = [];
      page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
      page.on("console", (m) => {
        if (m.type() === "error") problems.push(`console: ${m.text()}`);
        else logged.push(m.text());
      });
      await page.goto(`${server.url}example.html`);
      // Its last line is the demangled name.
      const deadline = Date.now() + 20_000;
      while (
        !logged.some((l) => l.startsWith("std::vector")) &&
        problems.length === 0 &&
        Date.now() < deadline
      )
        await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(problems, []);
      assert.deepEqual(logged, [
        // The first five instructions, then the count: every user-mode instruction.
        ...first,
        `${about.execution.userMode.instructions} instructions`,
        "std::vector<int, std::allocator<int> >::push_back(int const&)",
      ]);
      // The first is the program's entry, as the summary's first instruction says.
      assert.equal(`${first[0]!.replace(" ", ": ")}`, node.first);
    } finally {
      await page.close();
    }
  });

  test("decodes the bundled sample as Node does", { skip: SAMPLE_SKIP }, async () => {
    const trace = readFileSync(join(SAMPLE_DIR, "sample.pt"));
    const elf = readFileSync(join(SAMPLE_DIR, "sample.elf"));
    const about = JSON.parse(readFileSync(join(SAMPLE_DIR, "sample.json"), "utf8"));
    const node = decodeSummary(ptkit, trace, elf);
    assert.deepEqual(node.errors, []);
    // The trace unit traced user mode only: the decode gives every user-mode instruction.
    assert.equal(node.insns, about.execution.userMode.instructions);
    const { entryHi, entryLo } = ptkit.image.parseElf(elf);
    assert.ok(node.first.startsWith(`${ptkit.packet.toBigInt(entryHi, entryLo).toString(16)}: `), node.first);

    assert.deepEqual((await inPage("sample.pt", "sample.elf")).summary, node);
  });
});

/** The page of docs/browser.md: its html block, as it is. */
function docsExample(): string {
  const doc = readFileSync(join(REPO_ROOT, "docs", "browser.md"), "utf8");
  const html = /```html\n([\s\S]*?)```/.exec(doc);
  assert.ok(html, "docs/browser.md has an html block");
  return `<!doctype html>\n<meta charset="utf-8">\n<link rel="icon" href="data:,">\n${html[1]}`;
}
