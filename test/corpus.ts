/**
 * Where the shared corpus lives: `../shared/corpus` from the repository root, or
 * `$PTKIT_CORPUS`. Tests that need it skip with a clear message when it is absent.
 */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (tests run from dist/test/). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

export const CORPUS_DIR = process.env.PTKIT_CORPUS ?? join(REPO_ROOT, "..", "shared", "corpus");

/** The path of a corpus entry, or undefined (with a skip reason) when it is missing. */
export function corpusPath(...parts: string[]): string | undefined {
  const p = join(CORPUS_DIR, ...parts);
  return existsSync(p) ? p : undefined;
}

/** The `skip` option for node:test when a corpus entry is missing. */
export function skipUnlessCorpus(...parts: string[]): string | false {
  return corpusPath(...parts)
    ? false
    : `corpus entry ${join(CORPUS_DIR, ...parts)} is absent (set PTKIT_CORPUS)`;
}

/**
 * The decoder settings of DynamoRIO's drpt2trace test (`real/dynamorio-drpt2trace/test_simple.raw`,
 * Skylake-SP; its cmake excerpt in the corpus): as the session's settings, and as ptxed's words.
 */
export const DR_SETTINGS = {
  cpu: "6/85/4",
  mtcFreq: 3,
  nomFreq: 37,
  cpuid15Eax: 2,
  cpuid15Ebx: 308,
} as const;
export const DR_FLOW_ARGS: readonly string[] = [
  "--cpu",
  DR_SETTINGS.cpu,
  "--mtc-freq",
  `${DR_SETTINGS.mtcFreq}`,
  "--nom-freq",
  `${DR_SETTINGS.nomFreq}`,
  "--cpuid-0x15.eax",
  `${DR_SETTINGS.cpuid15Eax}`,
  "--cpuid-0x15.ebx",
  `${DR_SETTINGS.cpuid15Ebx}`,
];
