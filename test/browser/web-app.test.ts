/**
 * The web app (`ptkit web`) in headless Chromium: the HASE control_flow perf.data is
 * chosen through the page's file input, first alone (the page names the binary to
 * add), then with its program; the page decodes it in its worker and shows the same
 * functions, coverage and summary as the session layer computes in Node, the timeline
 * opens in speedscope, and every output is offered for download. Files named on
 * `ptkit web`'s command line are loaded and decoded without a click. A raw trace
 * (DynamoRIO's drpt2trace capture and its program) gets the decoder settings form,
 * and is decoded with them as rawAnswers and `ptkit flow` decode it in Node.
 */
// test:quick skips this file: runs headless Chromium.
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { concatBytes } from "../../src/perf/bytes.js";
import { bytesSource } from "../../src/perf/index.js";
import { FilesIo, type PerfAnswers, perfAnswers, rawAnswers } from "../../src/session/index.js";
import { CHROMIUM_SKIP, launchChromium } from "../../tools/browser/chromium.js";
import { readSandwich } from "../../tools/browser/speedscope.js";
import { corpusPath, DR_FLOW_ARGS, DR_SETTINGS, REPO_ROOT, skipUnlessCorpus } from "../corpus.js";

const DIR = ["real", "hase", "2018-04-04", "control_flow"];
const PERF = "control_flow-20180404T163033.perf";
const PROGRAM = "control_flow";
const CLI = join(REPO_ROOT, "dist", "cli", "ptkit.js");
const RAW_DIR = ["real", "dynamorio-drpt2trace", "test_simple.raw"];
/** The settings of DynamoRIO's drpt2trace test (its cmake excerpt in the corpus), as the form takes them. */
const RAW_FORM: Record<string, string> = {
  "raw-cpu": DR_SETTINGS.cpu,
  "raw-mtc": `${DR_SETTINGS.mtcFreq}`,
  "raw-nom": `${DR_SETTINGS.nomFreq}`,
  "raw-cpuid-eax": `${DR_SETTINGS.cpuid15Eax}`,
  "raw-cpuid-ebx": `${DR_SETTINGS.cpuid15Ebx}`,
};

/** `ptkit web --port 0 --no-open ...files` and the URL it serves. */
async function startWeb(files: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [CLI, "web", "--port", "0", "--no-open", ...files], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    let err = "";
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /serving (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.stderr!.on("data", (d: Buffer) => {
      err += d.toString();
    });
    child.on("exit", (code) => reject(new Error(`ptkit web exited (${code}): ${err}`)));
  });
  return { child, url };
}

/**
 * `ptkit web` serving `files` (its process added to `children`), and the app opened in
 * a new page of `browser`; `errors` collects the page's uncaught errors.
 */
async function openApp(
  browser: Browser,
  children: ChildProcess[],
  files: string[] = [],
): Promise<{ page: Page; errors: string[] }> {
  const web = await startWeb(files);
  children.push(web.child);
  const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(web.url);
  return { page, errors };
}

/** What the test reads of a table element (the DOM's types are not in this project's lib). */
interface TableElement {
  tBodies: ArrayLike<{ rows: Iterable<{ cells: Iterable<{ textContent: string | null }> }> }>;
}

/** The rows of the table inside `[data-ptkit=name]`, cells as text. */
async function tableRows(page: Page, name: string): Promise<string[][]> {
  return page
    .locator(`[data-ptkit="${name}"] table`)
    .first()
    .evaluate((t) =>
      [...(t as unknown as TableElement).tBodies[0]!.rows].map((r) =>
        [...r.cells].map((c) => c.textContent ?? ""),
      ),
    );
}

describe("the web app", { skip: CHROMIUM_SKIP || skipUnlessCorpus(...DIR) }, () => {
  const dir = corpusPath(...DIR)!;
  let browser: Browser;
  let expected: PerfAnswers;
  const children: ChildProcess[] = [];
  const tmp = mkdtempSync(join(tmpdir(), "ptkit-web-"));

  before(async () => {
    const io = new FilesIo();
    io.add(PERF, bytesSource(readFileSync(join(dir, PERF))));
    io.add(PROGRAM, bytesSource(readFileSync(join(dir, PROGRAM))));
    expected = perfAnswers(io, PERF, [PROGRAM]);
    assert.equal(expected.status, 0, expected.error);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    for (const c of children) c.kill();
    rmSync(tmp, { recursive: true, force: true });
  });

  test("a perf.data through the file input: missing binary named, then decoded with it", async () => {
    const { page, errors } = await openApp(browser, children);

    // The perf.data alone: the page says which binary to add. (Two stops in it: after
    // the first, the decode takes up at the next address a packet gives whole, as
    // perf's decoder does, and meets the missing program again.)
    await page.locator('[data-ptkit="input"]').setInputFiles(join(dir, PERF));
    await page.locator('[data-ptkit="decode"]').click();
    const missing = page.locator('[data-ptkit="missing"]');
    await missing.waitFor({ state: "visible", timeout: 60_000 });
    assert.match(
      (await missing.textContent()) ?? "",
      /Add control_flow \(recorded as \/\S+\/control_flow\): 2 addresses needed it/,
    );

    // With the program: the same answers as the session layer gives in Node.
    await page.locator('[data-ptkit="input"]').setInputFiles(join(dir, PROGRAM));
    await page.locator('[data-ptkit="decode"]').click();
    await page.locator('[data-ptkit="missing"]').waitFor({ state: "hidden", timeout: 60_000 });
    await page.locator('[data-ptkit="functions"] tbody tr').first().waitFor({ timeout: 60_000 });
    const functions = await tableRows(page, "functions");
    assert.deepEqual(
      functions.map((r) => [r[0], r[1], r[3], r[4]]),
      expected.functions.map((f) => [
        f.name,
        f.self.toLocaleString("en-US"),
        f.total.toLocaleString("en-US"),
        `${f.calls}`,
      ]),
    );
    assert.equal(functions[0]![0], "__init_libc");
    assert.ok(functions.some((r) => r[0] === "main"));
    assert.match(
      (await page.locator('[data-ptkit="summary"]').textContent()) ?? "",
      /^1092 instructions, 17 calls, 1 thread in 1 process$/,
    );
    const coverage = await tableRows(page, "coverage");
    assert.deepEqual(
      coverage.map((r) => r[0]),
      expected.coverage.map((c) => c.name),
    );
    // A function's blocks, on a click.
    await page.locator('[data-ptkit="coverage"] tbody tr', { hasText: "main" }).first().click();
    const blocks = await tableRows(page, "blocks");
    assert.ok(
      blocks.length > 1 && blocks.every((b) => /^main(\+0x[0-9a-f]+)?$/.test(b[4]!)),
      JSON.stringify(blocks),
    );
    // Its annotated disassembly: every instruction run, the runs adding up to the function's.
    const listing = await tableRows(page, "annotate");
    const runs = listing.reduce((n, r) => n + Number(r[0]!.replace(/,/g, "")), 0);
    assert.equal(runs, expected.coverage.find((c) => c.name === "main")!.insns);
    assert.deepEqual(
      listing.map((r) => r[2]),
      expected.annotated.find((f) => f.name === "main")!.lines.map((l) => l.text),
    );
    assert.ok(
      listing.some((r) => /^call /.test(r[2]!)),
      JSON.stringify(listing),
    );

    // Downloads: every output, byte-equal to the session's.
    const links = await page
      .locator('[data-ptkit="downloads"] a')
      .evaluateAll((as) => as.map((a) => (a as unknown as { download: string }).download));
    assert.deepEqual(links.sort(), [
      "afl-map.bin",
      "annotate.txt",
      "coverage.json",
      "folded.txt",
      "latency.json",
      "timeline.json",
    ]);
    const download = page.waitForEvent("download");
    await page.locator('[data-ptkit="downloads"] a', { hasText: "folded.txt" }).click();
    const saved = join(tmp, "folded.txt");
    await (await download).saveAs(saved);
    assert.deepEqual(new Uint8Array(readFileSync(saved)), concatBytes(expected.files.folded!));

    // The timeline in speedscope: its views, the trace's functions in its Sandwich table.
    const viewer = page.frameLocator('[data-ptkit="timeline"]');
    await viewer.getByText("Time Order").waitFor({ timeout: 30_000 });
    await viewer.locator("canvas").first().waitFor({ timeout: 30_000 });
    const shot = await page.screenshot({ fullPage: true });
    assert.ok(shot.length > 20_000, `a screenshot of ${shot.length} bytes`);
    if (process.env.PTKIT_WEB_SCREENSHOT) writeFileSync(process.env.PTKIT_WEB_SCREENSHOT, shot);
    const names = (await readSandwich(viewer)).map((r) => r.name);
    for (const f of ["main", "__init_libc", "_start"])
      assert.ok(names.includes(f), `speedscope lists ${f}: ${names}`);
    assert.deepEqual(errors, []);
    await page.close();
  });

  test("files named on the command line are decoded when the page opens", async () => {
    const { page } = await openApp(browser, children, [join(dir, PERF), join(dir, PROGRAM)]);
    await page.locator('[data-ptkit="functions"] tbody tr').first().waitFor({ timeout: 60_000 });
    assert.equal((await tableRows(page, "functions"))[0]![0], expected.functions[0]!.name);
    assert.match(
      (await page.locator('[data-ptkit="status"]').textContent()) ?? "",
      /^Decoded control_flow-20180404T163033\.perf in /,
    );
    await page.close();
  });

  test("a file that is not a perf.data: the page says so", async () => {
    const { page } = await openApp(browser, children);
    await page.locator('[data-ptkit="input"]').setInputFiles(join(dir, PROGRAM));
    await page.locator('[data-ptkit="decode"]').click();
    // The status is written once the page has looked at the file (after the click returns).
    const status = page.locator('[data-ptkit="status"]');
    const says = /None of the files is a perf\.data file/;
    await status
      .filter({ hasText: says })
      .waitFor({ timeout: 30_000 })
      .catch(() => {});
    assert.match((await status.textContent()) ?? "", says);
    await page.close();
  });
});

describe("the web app with a raw trace", { skip: CHROMIUM_SKIP || skipUnlessCorpus(...RAW_DIR) }, () => {
  const dir = corpusPath(...RAW_DIR)!;
  let browser: Browser;
  let expected: PerfAnswers;
  const children: ChildProcess[] = [];
  const tmp = mkdtempSync(join(tmpdir(), "ptkit-web-raw-"));

  before(async () => {
    const io = new FilesIo();
    for (const n of ["pt.bin", "hello"]) io.add(n, bytesSource(readFileSync(join(dir, n))));
    expected = await rawAnswers(io, "pt.bin", [{ name: "hello" }], DR_SETTINGS);
    assert.equal(expected.status, 0, expected.error);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    for (const c of children) c.kill();
    rmSync(tmp, { recursive: true, force: true });
  });

  test("the settings form, then the answers rawAnswers and ptkit flow give", async () => {
    const { page, errors } = await openApp(browser, children);
    await page.locator('[data-ptkit="input"]').setInputFiles([join(dir, "pt.bin"), join(dir, "hello")]);
    await page.locator('[data-ptkit="decode"]').click();
    const form = page.locator('[data-ptkit="raw"]');
    await form.waitFor({ state: "visible", timeout: 30_000 });
    assert.match(
      (await page.locator('[data-ptkit="status"]').textContent()) ?? "",
      /^pt\.bin is a raw Intel PT trace: /,
    );
    assert.equal(await page.locator('[data-ptkit="raw-trace"]').inputValue(), "pt.bin");
    // The program's load address defaults to its own.
    const base = page.locator('[data-ptkit="raw-base"][data-file="hello"]');
    assert.equal(await base.inputValue(), "");
    for (const [name, value] of Object.entries(RAW_FORM))
      await page.locator(`[data-ptkit="${name}"]`).fill(value);
    await page.locator('[data-ptkit="raw-decode"]').click();
    await page.locator('[data-ptkit="functions"] tbody tr').first().waitFor({ timeout: 60_000 });
    const functions = await tableRows(page, "functions");
    assert.deepEqual(
      functions.map((r) => [r[0], r[1], r[3], r[4], r[5]]),
      expected.functions.map((f) => [
        f.name,
        f.self.toLocaleString("en-US"),
        f.total.toLocaleString("en-US"),
        `${f.calls}`,
        (f.ns / 1000).toFixed(3),
      ]),
    );
    assert.ok(functions.some((r) => r[0] === "_start" && r[1] === "8"));
    assert.equal(
      (await page.locator('[data-ptkit="summary"]').textContent()) ?? "",
      expected.summary.replace(/^wrote [^:]*: /, ""),
    );
    assert.match((await page.locator('[data-ptkit="status"]').textContent()) ?? "", /^Decoded pt\.bin in /);
    // Downloads: the latencies (their times need the settings) as rawAnswers and ptkit flow write them.
    const download = page.waitForEvent("download");
    await page.locator('[data-ptkit="downloads"] a', { hasText: "latency.json" }).click();
    const saved = join(tmp, "latency.json");
    await (await download).saveAs(saved);
    const got = new Uint8Array(readFileSync(saved));
    assert.deepEqual(got, concatBytes(expected.files.latency!));
    const flowOut = join(tmp, "flow-latency.json");
    const flow = spawnSync(
      process.execPath,
      [
        CLI,
        "flow",
        ...DR_FLOW_ARGS,
        "--elf",
        "hello",
        "--pt",
        "pt.bin",
        "--quiet",
        "--timeline",
        join(tmp, "flow-timeline.json"),
        "--latency",
        flowOut,
      ],
      { cwd: dir, encoding: "utf8" },
    );
    assert.equal(flow.status, 0, flow.stderr);
    assert.deepEqual(got, new Uint8Array(readFileSync(flowOut)));
    assert.match(new TextDecoder().decode(got), /"clock":"ns"/);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
