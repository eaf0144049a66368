/**
 * `ptkit web`'s command line: bad options and files get one line and exit 1 before
 * anything is served; the server hands out the app's files and the named ones, and
 * nothing outside them. (The page itself: test/browser/web-app.test.ts.)
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { runWeb, webHandler } from "../../src/cli/web/web.js";
import { captureIo } from "../conformance/ptt.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-web-cli-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("bad options and files: one line each, exit 1", async () => {
  for (const [args, want] of [
    [["--port", "x"], /^ptkit web: --port: want a port number \(0-65535\): x\n$/],
    [["--port", "70000"], /^ptkit web: --port: want a port number \(0-65535\): 70000\n$/],
    [["--bogus"], /^ptkit web: Unknown option '--bogus'.*\nUse --help or -h for help\.\n$/],
    [["--no-open", "missing.data"], /^ptkit web: cannot read missing\.data: no such file\n$/],
  ] as const) {
    const io = captureIo(dir);
    assert.equal(await runWeb([...args], io), 1, args.join(" "));
    assert.match(io.err.join(""), want);
  }
});

test("--help", async () => {
  const io = captureIo(dir);
  assert.equal(await runWeb(["--help"], io), 0);
  assert.match(io.out.join(""), /^usage: ptkit web \[--port <n>\] \[--no-open\] \[<file>\.\.\.\]/);
});

test("the server: the app's files, the named files under files/, nothing else", async () => {
  const root = join(dir, "app");
  mkdirSync(root);
  writeFileSync(join(root, "index.html"), "<p>app</p>");
  writeFileSync(join(dir, "secret.txt"), "not served");
  writeFileSync(join(dir, "perf.data"), "PERFILE2");
  const server = createServer(webHandler(root, new Map([["perf.data", join(dir, "perf.data")]])));
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const get = async (path: string) => {
      const r = await fetch(base + path);
      return [r.status, await r.text()] as const;
    };
    assert.deepEqual(await get("/"), [200, "<p>app</p>"]);
    assert.deepEqual(await get("/files.json"), [200, '["perf.data"]']);
    assert.deepEqual(await get("/files/perf.data"), [200, "PERFILE2"]);
    assert.equal((await get("/files/secret.txt"))[0], 404);
    assert.equal((await get("/../secret.txt"))[0], 404);
    // Dot segments resolve inside the app's root (URL parsing), so nothing above it is reached.
    assert.equal((await get("/%2e%2e/secret.txt"))[0], 404);
    assert.equal((await get("/files/..%2fsecret.txt"))[0], 404);
    assert.equal((await fetch(`${base}/`, { method: "POST" })).status, 405);
  } finally {
    server.close();
  }
});
