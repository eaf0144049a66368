/**
 * `ptkit web [--port N] [--no-open] [FILE...]`: serves the web app (built by
 * `npm run build` into dist/web/; see web/ and tools/web/build-web.ts) on 127.0.0.1,
 * with the files named, which the page loads and decodes at once. Decoding happens in
 * the browser: the server only hands out files.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { basename, join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { contentType } from "../../node/content-type.js";
import { ioErrorText } from "../../session/file-kind.js";
import type { SessionIo } from "../../session/io.js";

const HELP = `usage: ptkit web [--port <n>] [--no-open] [<file>...]

Serve ptkit's web app on http://127.0.0.1:<port>/: drop a perf.data file and the
binaries it ran into the page (or name them here: the page loads and decodes them
at once), or a raw trace and the ELF files it ran (the page asks for the decoder
settings, as ptkit flow takes them), and see a summary, the hottest functions, per-thread call timelines and a
flame graph (speedscope), coverage by function and block, and downloads of every
output. Decoding runs in the browser, in a worker; nothing is uploaded. The app is
static files: 'npm run web -- DIR' writes them for any web server.

options:
  --port <n>    the port (default 8421; 0: any free port).
  --no-open     do not open a browser.
  -h, --help    this text.
`;

/** The built app: dist/web beside the bundled CLI (dist/cli) or the compiled one (dist/src/cli/web). */
export function webRoot(): string | undefined {
  for (const rel of ["../web/", "../../../web/"]) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(join(dir, "index.html"))) return dir;
  }
  return undefined;
}

type Reply = [status: number, type: string, body: string | Uint8Array];

const notFound: Reply = [404, "text/plain", "not found\n"];

/** The server's files: `root`'s, and FILE... under files/ with their names in files.json. */
export function webHandler(root: string, files: ReadonlyMap<string, string>) {
  const list = JSON.stringify([...files.keys()]);
  const inRoot = root.endsWith(sep) ? root : root + sep;
  const reply = (method: string | undefined, url: string | undefined): Reply => {
    if (method !== "GET" && method !== "HEAD") return [405, "text/plain", "GET only\n"];
    let path: string;
    try {
      path = decodeURIComponent(new URL(url ?? "/", "http://x").pathname);
    } catch {
      return [400, "text/plain", "bad path\n"];
    }
    if (path === "/files.json") return [200, contentType("files.json"), list];
    if (path.startsWith("/files/")) {
      const file = files.get(path.slice("/files/".length));
      if (file === undefined) return notFound;
      try {
        return [200, "application/octet-stream", readFileSync(file)];
      } catch (e) {
        return [500, "text/plain", `${(e as Error).message}\n`];
      }
    }
    const full = normalize(join(root, path.endsWith("/") ? `${path}index.html` : path));
    if (!full.startsWith(inRoot)) return [403, "text/plain", "forbidden\n"];
    try {
      if (!statSync(full).isFile()) return notFound;
      return [200, contentType(full), readFileSync(full)];
    } catch {
      return notFound;
    }
  };
  return (req: IncomingMessage, res: ServerResponse): void => {
    const [status, type, body] = reply(req.method, req.url);
    res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
    res.end(body);
  };
}

export async function runWeb(argv: readonly string[], io: SessionIo): Promise<number> {
  let values: { port?: string; "no-open"?: boolean; help?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: [...argv],
      options: {
        port: { type: "string" },
        "no-open": { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      allowPositionals: true,
    }));
  } catch (e) {
    io.stderr(`ptkit web: ${(e as Error).message}\nUse --help or -h for help.\n`);
    return 1;
  }
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  const port = values.port === undefined ? 8421 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535 || !/^\d+$/.test(values.port ?? "0")) {
    io.stderr(`ptkit web: --port: want a port number (0-65535): ${values.port}\n`);
    return 1;
  }
  const root = webRoot();
  if (root === undefined) {
    io.stderr("ptkit web: the web app is not built: run 'npm run build' in ptkit's directory.\n");
    return 1;
  }
  const files = new Map<string, string>();
  for (const f of positionals) {
    const path = resolve(io.cwd, f);
    try {
      if (!statSync(path).isFile()) throw new Error("not a regular file");
    } catch (e) {
      io.stderr(`ptkit web: cannot read ${f}: ${ioErrorText(e)}\n`);
      return 1;
    }
    files.set(basename(path), path);
  }
  const server = createServer(webHandler(root, files));
  const listening = await new Promise<string | undefined>((done) => {
    server.once("error", (e: NodeJS.ErrnoException) =>
      done(e.code === "EADDRINUSE" ? `port ${port} is in use: choose another with --port` : e.message),
    );
    server.listen(port, "127.0.0.1", () => done(undefined));
  });
  if (listening !== undefined) {
    io.stderr(`ptkit web: ${listening}\n`);
    return 1;
  }
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  io.stdout(
    `ptkit web: serving ${url}${files.size > 0 ? ` with ${[...files.keys()].join(", ")}` : ""} (Ctrl-C stops)\n`,
  );
  if (!values["no-open"]) {
    const opener = spawn("xdg-open", [url], { stdio: "ignore", detached: true });
    opener.on("error", () => io.stderr(`ptkit web: could not open a browser: open ${url}\n`));
    opener.unref();
  }
  // Serves until the process is stopped.
  return new Promise<number>(() => {});
}
