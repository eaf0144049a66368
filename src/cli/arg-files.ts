/**
 * Response files: a command-line word `@FILE` stands for the options in FILE, so that
 * a long image description (`ptkit simulate` writes one beside each trace) makes a
 * short command: `ptkit flow @trace.pt.args --pt trace.pt`.
 *
 * Format: one option per line, optionally followed by a space and its argument (the
 * rest of the line, spaces included: `--elf /my dir/prog:0x1000`). Blank lines and
 * lines starting with `#` are skipped. `@` words inside a file are not expanded again;
 * a file whose name starts with `@` is passed as `./@name`.
 */
import type { SessionIo } from "../session/io.js";

/** The words of a response file's text. */
export function argFileWords(text: string): string[] {
  const words: string[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const space = line.search(/\s/);
    if (space < 0) words.push(line);
    else words.push(line.slice(0, space), line.slice(space).trim());
  }
  return words;
}

/** `argv` with each `@FILE` replaced by the file's words, or an error message. */
export function expandArgFiles(io: SessionIo, argv: readonly string[]): string[] | string {
  if (!argv.some((a) => a.length > 1 && a.startsWith("@"))) return [...argv];
  const out: string[] = [];
  for (const arg of argv) {
    if (arg.length < 2 || !arg.startsWith("@")) {
      out.push(arg);
      continue;
    }
    const path = arg.slice(1);
    let bytes: Uint8Array;
    try {
      bytes = io.readFile(path);
    } catch (e) {
      return `${arg}: cannot read the options file ${path}: ${(e as Error).message}.`;
    }
    out.push(...argFileWords(new TextDecoder().decode(bytes)));
  }
  return out;
}

/** A response file's text for `words` (an option and its argument per line), headed by `comment`. */
export function argFileText(comment: string, words: readonly string[]): string {
  const lines = [`# ${comment}`];
  for (let k = 0; k < words.length; k++) {
    const w = words[k]!;
    const next = words[k + 1];
    if (next !== undefined && !next.startsWith("-")) {
      lines.push(`${w} ${next}`);
      k++;
    } else lines.push(w);
  }
  return `${lines.join("\n")}\n`;
}
