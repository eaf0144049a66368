/**
 * The C programs of test/fixtures/programs, compiled with the system's gcc into a
 * temporary directory, run under valgrind's lackey and converted to executions. Each
 * is built and run once per test process. Missing tools make a skip reason.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runUnderLackey, VALGRIND_HINT, valgrindVersion } from "../../../src/node/valgrind.js";
import { convertLackey, type LackeyResult } from "../../../src/unit/exec/lackey.js";
import { KERNEL_CODE } from "../../../src/unit/exec/lackey-kernel.js";
import { ProcessImage } from "../../../src/unit/exec/process-image.js";
import { REPO_ROOT } from "../../corpus.js";

export const PROGRAMS_DIR = join(REPO_ROOT, "test", "fixtures", "programs");

/** Linked dynamically, to bring ld.so, libc.so and the PLT in; the others are static (shorter runs). */
const DYNAMIC = new Set(["indirect"]);

export interface Program {
  name: string;
  binary: string;
  /** The program's exit status and output under valgrind. */
  status: number | null;
  stdout: string;
  /** Instructions lackey says it ran (its "guest instrs" summary line). */
  guestInstrs: number;
  lackey: LackeyResult;
  image: ProcessImage;
  /** `--map` arguments for the libipt harness (the kernel's code included). */
  maps: string[];
}

export type Programs = { programs: Program[] } | { skip: string };

let cached: Programs | undefined;

/** Every program, built and run (once per process). */
export function programs(): Programs {
  cached ??= buildAll();
  return cached;
}

function buildAll(): Programs {
  const cc = process.env.CC || "gcc";
  const version = spawnSync(cc, ["--version"], { encoding: "utf8" });
  if (version.error || version.status !== 0)
    return { skip: `no C compiler (${cc}) (apt-get install gcc libc6-dev)` };
  if (valgrindVersion() === undefined) return { skip: `valgrind is not installed ${VALGRIND_HINT}` };
  const dir = mkdtempSync(join(tmpdir(), "ptkit-programs-"));
  const kernelFile = join(dir, "kernel.bin");
  writeFileSync(kernelFile, KERNEL_CODE);
  const list: Program[] = [];
  for (const source of readdirSync(PROGRAMS_DIR)
    .filter((f) => f.endsWith(".c"))
    .sort()) {
    const name = source.slice(0, -2);
    const binary = join(dir, name);
    const link = DYNAMIC.has(name) ? [] : ["-static"];
    const r = spawnSync(cc, ["-O1", ...link, "-o", binary, join(PROGRAMS_DIR, source)], { encoding: "utf8" });
    if (r.status !== 0) {
      if (/cannot find -lc/.test(r.stderr))
        return { skip: `static libc is missing (apt-get install libc6-dev)` };
      throw new Error(`${cc} ${source} failed:\n${r.stderr}`);
    }
    const logFile = join(dir, `${name}.log`);
    const run = runUnderLackey([binary], logFile);
    if (typeof run === "string") return { skip: run };
    const log = new Uint8Array(readFileSync(logFile));
    rmSync(logFile);
    const image = new ProcessImage((path) => new Uint8Array(readFileSync(path)));
    const lackey = convertLackey(log, { code: image.image, onObject: (path, bias) => image.map(path, bias) });
    const summary = /guest instrs: +([\d,]+)\n/.exec(new TextDecoder().decode(log.subarray(-4096)));
    list.push({
      name,
      binary,
      status: run.status,
      stdout: run.stdout,
      guestInstrs: summary ? Number(summary[1]!.replaceAll(",", "")) : -1,
      lackey,
      image,
      maps: image.rawArgs(kernelFile),
    });
  }
  return { programs: list };
}
