/**
 * Helpers for the browser tests and tools: headless Chromium through playwright-core
 * (never a downloaded browser: Debian's `chromium`, or `$PTKIT_CHROMIUM`), and a static
 * file server on 127.0.0.1 for the pages they load.
 */
import { existsSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type Browser, chromium } from "playwright-core";
import { contentType } from "../../src/node/content-type.js";

export const CHROMIUM = process.env.PTKIT_CHROMIUM ?? "/usr/bin/chromium";

/** The skip reason when there is no Chromium, else false. */
export const CHROMIUM_SKIP: string | false = existsSync(CHROMIUM)
  ? false
  : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set PTKIT_CHROMIUM)`;

/**
 * Headless, offline, and able to run as root. playwright-core gives it a new empty
 * --user-data-dir (a temporary profile it deletes on close).
 */
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 30_000 });
}

export interface ServedFile {
  type: string;
  body: string | Uint8Array;
}

/** A file to serve, its content type from its extension. */
export function servedFile(name: string, body: string | Uint8Array): ServedFile {
  return { type: contentType(name), body };
}

export interface StaticServer {
  /** http://127.0.0.1:port/ */
  url: string;
  close(): Promise<void>;
}

/** Serves `files` (by path, "/page.html") on an ephemeral port of 127.0.0.1; 404 for the rest. */
export async function serveFiles(files: ReadonlyMap<string, ServedFile>): Promise<StaticServer> {
  const server = createServer((req, res) => {
    const file = files.get(new URL(req.url ?? "/", "http://localhost").pathname);
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": file.type, "cache-control": "no-store" }).end(file.body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
