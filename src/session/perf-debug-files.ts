/**
 * Where perf looks for a binary's symbols besides the binary itself (perf 6.1's
 * dso__load order of the debug-info kinds): the build-id cache's `debug` file, then
 * under the debug root (/usr/lib/debug, below --symfs when given) `<path>.debug`
 * (Fedora), `<path>` (Ubuntu) and `.build-id/xx/yyyy.debug`. The first that is an
 * ELF file with a .symtab (and, when both are known, the recorded build id) names
 * the addresses; the code still comes from the binary. No Node-only API.
 */
import { ElfError, type ElfFile, tryParseElf } from "../image/index.js";

/** perf's debug directory. */
export const DEBUG_ROOT = "/usr/lib/debug";

/** The debug files that may hold `path`'s symbols, in perf's order. */
export function debugFileCandidates(
  path: string,
  buildId: string | undefined,
  options: { root: string; symfs: string | undefined; buildIdDir: string | undefined },
): string[] {
  const out: string[] = [];
  const id = buildId?.toLowerCase();
  if (options.buildIdDir && id)
    out.push(`${options.buildIdDir}/.build-id/${id.slice(0, 2)}/${id.slice(2)}/debug`);
  if (!path.startsWith("/") || path.startsWith("//")) return out;
  const root = `${options.symfs ?? ""}${options.root}`;
  out.push(`${root}${path}.debug`, `${root}${path}`);
  if (id) out.push(`${root}/.build-id/${id.slice(0, 2)}/${id.slice(2)}.debug`);
  return out;
}

/** `bytes` as a debug file for a binary of build id `buildId`: an ELF file with a .symtab (and that build id). */
export function asDebugFile(bytes: Uint8Array, buildId: string | undefined): ElfFile | undefined {
  const elf = tryParseElf(bytes, { strict: false });
  if (elf instanceof ElfError) return undefined;
  if (!elf.sections.some((s) => s.name === ".symtab")) return undefined;
  if (buildId && elf.buildId) {
    const own = [...elf.buildId].map((b) => b.toString(16).padStart(2, "0")).join("");
    if (own !== buildId.toLowerCase().slice(0, own.length)) return undefined;
  }
  return elf;
}
