/**
 * libipt's conformance suite (corpus/ptt): manifests, checks, and running a check's
 * argv through ptkit in-process with its output compared like `diff -ub`.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { main } from "../../src/cli/ptkit.js";
import { regularFileSize } from "../../src/node/io.js";
import type { SessionIo } from "../../src/session/io.js";
import { corpusPath } from "../corpus.js";

export interface PttCheck {
  /** "<test>/<variant dir>/<tool> <args>": unique and readable. */
  id: string;
  test: string;
  dir: string;
  tool: string;
  argv: string[];
  exp: string;
}

interface Manifest {
  name: string;
  variants: Array<{ dir: string; checks: Array<{ tool: string; argv: string[]; exp: string }> }>;
}

/** Every check of the suite (empty when the corpus is absent). */
export function loadPttChecks(): PttCheck[] {
  const root = corpusPath("ptt");
  if (!root) return [];
  const checks: PttCheck[] = [];
  for (const name of readdirSync(root).sort()) {
    const manifestPath = join(root, name, "manifest.json");
    try {
      statSync(manifestPath);
    } catch {
      continue;
    }
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as Manifest;
    for (const variant of manifest.variants) {
      const dir = resolve(root, name, variant.dir);
      for (const c of variant.checks) {
        checks.push({
          id: `${name}/${variant.dir}: ${c.argv.join(" ")}`,
          test: name,
          dir,
          tool: c.tool,
          argv: c.argv,
          exp: join(dir, c.exp),
        });
      }
    }
  }
  return checks;
}

/** A ptxed check's inputs: its directory and the options kept, with their values, in order. */
export interface PtxedInput {
  id: string;
  dir: string;
  argv: string[];
}

/** ptxed's address filter options (--filter:addrN_cfg, _a, _b), which SKL014's checks give. */
export const FILTER_OPTIONS: readonly string[] = [0, 1, 2, 3].flatMap((n) =>
  ["cfg", "a", "b"].map((f) => `--filter:addr${n}_${f}`),
);

/**
 * The ptxed checks' inputs, each once: of each check's options those in `kept` (each
 * with its value: the code and trace, and what else the caller decodes with), without
 * what it prints or checks; checks with sideband are left out.
 */
export function ptxedInputs(kept: ReadonlySet<string>): PtxedInput[] {
  const seen = new Set<string>();
  const inputs: PtxedInput[] = [];
  next: for (const c of loadPttChecks()) {
    if (c.tool !== "ptxed") continue;
    const argv: string[] = [];
    for (let i = 1; i < c.argv.length; i++) {
      const a = c.argv[i]!;
      if (a.startsWith("--pevent") || a.startsWith("--sb")) continue next;
      if (kept.has(a)) argv.push(a, c.argv[++i]!);
    }
    const key = `${c.dir} ${argv.join(" ")}`;
    if (!argv.includes("--pt") || seen.has(key)) continue;
    seen.add(key);
    inputs.push({ id: c.id, dir: c.dir, argv });
  }
  return inputs;
}

/**
 * `check` each input in turn (an error names the check the input is from): how many
 * it returned true for.
 */
export async function countInputs(
  inputs: readonly PtxedInput[],
  check: (input: PtxedInput) => Promise<boolean>,
): Promise<number> {
  let n = 0;
  for (const input of inputs) {
    try {
      if (await check(input)) n++;
    } catch (e) {
      throw new Error(`${input.id}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return n;
}

/**
 * Make `io`'s files written in parts behave as pipes do: what is written stays, opening
 * the path again does not empty it (no FileWriter.reopens). The text written, by path.
 */
export function pipeWriters(io: SessionIo): Map<string, string> {
  const files = new Map<string, string>();
  io.openWrite = (path) => {
    if (!files.has(path)) files.set(path, "");
    return {
      write: (c) =>
        files.set(path, files.get(path) + (typeof c === "string" ? c : Buffer.from(c).toString())),
      close: () => {},
    };
  };
  return files;
}

/** ptkit's command for a libipt tool. */
const COMMAND: Record<string, string> = { ptdump: "dump", ptxed: "flow" };

/** An in-memory SessionIo rooted at `cwd` that captures stdout and stderr. */
export function captureIo(cwd: string): SessionIo & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  const read = (p: string) => new Uint8Array(readFileSync(resolve(cwd, p)));
  return {
    cwd,
    out,
    err,
    readFile: read,
    fileSize: (p) => regularFileSize(resolve(cwd, p)),
    readRange: (p, offset, length) => read(p).slice(offset, offset + length),
    writeFile: (p, bytes) => writeFileSync(resolve(cwd, p), bytes),
    // Collected in memory, the file written at close (created at once, so bad paths throw).
    openWrite: (p) => {
      writeFileSync(resolve(cwd, p), "");
      const chunks: Buffer[] = [];
      return {
        reopens: true,
        write: (chunk) => {
          chunks.push(Buffer.from(chunk));
        },
        close: () => writeFileSync(resolve(cwd, p), Buffer.concat(chunks)),
      };
    },
    stdout: (t) => out.push(t),
    stderr: (t) => err.push(t),
    stderrIsTty: false,
  };
}

/** Run a check through ptkit; returns stdout, stderr and the exit code. */
export async function runCheck(check: PttCheck): Promise<{ stdout: string; stderr: string; code: number }> {
  const io = captureIo(check.dir);
  const [tool, ...args] = check.argv;
  const code = await main([COMMAND[tool!] ?? tool!, ...args], io);
  return { stdout: io.out.join(""), stderr: io.err.join(""), code };
}

/** Lines with runs of blanks folded and trailing blanks dropped, as `diff -b` compares them. */
export function diffBLines(text: string): string[] {
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines.map((l) => l.replace(/[ \t]+/g, " ").replace(/ $/, ""));
}

/** The first differing line (1-based) with both versions, or undefined when equal under -ub. */
export function firstDifference(expected: string, actual: string): string | undefined {
  const e = diffBLines(expected);
  const a = diffBLines(actual);
  for (let i = 0; i < Math.max(e.length, a.length); i++) {
    if (e[i] !== a[i])
      return `line ${i + 1}:\n  expected: ${e[i] ?? "<end>"}\n  actual:   ${a[i] ?? "<end>"}`;
  }
  return undefined;
}
