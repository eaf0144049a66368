/**
 * perf script's srcline field (-F ...,srcline): below a sample's line, two spaces and
 * the source line of its address, `file:line` (the file's base name), as perf 6.1
 * prints what addr2line answers: `t.c:0` where the tool knows the file but not the
 * line; where it knows neither, the binary's base name and the address perf asked
 * about, `prog[401000]`.
 *
 * The session layer cannot run addr2line: the front end injects a
 * {@link SourceLineLookup} (the Node command's runs addr2line or llvm-symbolizer). A
 * lookup per sample would run the tool per sample, so the lines of up to
 * {@link BATCH} samples are held, with the addresses they need, and looked up
 * together: one call per binary and batch.
 */
import { ByteChunks, immediate } from "../analysis/export/byte-chunks.js";
import type { ElfFile } from "../image/index.js";
import type { ByteLines } from "./byte-lines.js";

/**
 * Source lines of addresses in an ELF file (its own addresses, as objdump shows them):
 * for each, the file and line (0: unknown), or undefined where nothing is known; a
 * string: why no lookup could be made (said once, then no lines are printed).
 */
export type SourceLineLookup = (
  file: string,
  addrs: readonly bigint[],
) => Array<{ file: string; line: number } | undefined> | string;

/** Samples whose lines are held for one lookup. */
const BATCH = 1 << 16;

/** Where a code address is: the local file to ask about, the address in it, the name perf shows. */
export interface SourceAddress {
  file: string;
  addr: bigint;
}

/**
 * perf's objdump address of file offset `offset` of `elf` (map__rip_2objdump): the
 * offset plus .text's address minus its file offset; without .text, the PT_LOAD
 * segment's address at that offset. Undefined: no segment holds it.
 */
export function objdumpAddress(elf: ElfFile, offset: number): bigint | undefined {
  let delta = textDelta.get(elf);
  if (delta === undefined) {
    const text = elf.sections.find((s) => s.name === ".text");
    delta = text ? ((BigInt(text.addrHi) << 32n) | BigInt(text.addrLo)) - BigInt(text.offset) : null;
    textDelta.set(elf, delta);
  }
  if (delta !== null) return BigInt(offset) + delta;
  const seg = elf.loads.find((l) => l.offset <= offset && offset < l.offset + l.filesz);
  if (!seg) return undefined;
  return ((BigInt(seg.vaddrHi) << 32n) | BigInt(seg.vaddrLo)) + BigInt(offset - seg.offset);
}

/** Each ELF file's .text address less its file offset (null: no .text). */
const textDelta = new WeakMap<ElfFile, bigint | null>();

/** The base name of a path. */
function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/**
 * Output for perf script's lines with srcline: {@link lines} takes the sink's bytes;
 * {@link at} marks where a sample's source line goes (before its newline).
 */
export class SourceLineBatch {
  /** Where the sink writes its lines. */
  readonly lines: ByteChunks & { line(text: string): void };
  private readonly parts: Uint8Array[] = [];
  /** Per mark: the address (undefined: none, nothing printed) and the part index it follows. */
  private readonly marks: Array<{ at: SourceAddress | undefined; part: number }> = [];
  private failed = false;

  constructor(
    private readonly out: ByteLines,
    private readonly lookup: SourceLineLookup | undefined,
    private readonly note: (text: string) => void,
  ) {
    const parts = this.parts;
    // Copied out at once: the one buffer is reused (not a fresh 64 KiB one per sample).
    const chunks = new ByteChunks(immediate((chunk) => parts.push(chunk.slice())));
    this.lines = Object.assign(chunks, {
      line(text: string) {
        chunks.text(text);
        chunks.byte(0x0a);
      },
    });
  }

  /** A sample's source line goes here: that of `at` (undefined: an address in no file). */
  at(at: SourceAddress | undefined): void {
    this.lines.flush();
    this.marks.push({ at, part: this.parts.length });
    if (this.marks.length >= BATCH) this.flush();
  }

  /** Look the held addresses up and write everything held. */
  flush(): void {
    this.lines.flush();
    const texts = this.resolve();
    let part = 0;
    for (let m = 0; m < this.marks.length; m++) {
      const mark = this.marks[m]!;
      for (; part < mark.part; part++) this.out.bytes(this.parts[part]!);
      const text = texts[m];
      if (text !== undefined) this.out.text(`\n  ${text}`);
    }
    for (; part < this.parts.length; part++) this.out.bytes(this.parts[part]!);
    this.parts.length = 0;
    this.marks.length = 0;
  }

  /** The text of each mark (undefined: nothing printed). */
  private resolve(): Array<string | undefined> {
    const texts: Array<string | undefined> = new Array(this.marks.length);
    if (!this.lookup) return texts;
    const byFile = new Map<string, number[]>();
    for (let m = 0; m < this.marks.length; m++) {
      const at = this.marks[m]!.at;
      if (at === undefined) continue;
      const list = byFile.get(at.file);
      if (list) list.push(m);
      else byFile.set(at.file, [m]);
    }
    for (const [file, ms] of byFile) {
      const addrs = ms.map((m) => this.marks[m]!.at!.addr);
      const found = this.failed ? undefined : this.lookup(file, addrs);
      if (typeof found === "string") {
        this.failed = true;
        this.note(`-F srcline: ${found}; no source lines are printed`);
      }
      for (let k = 0; k < ms.length; k++) {
        if (typeof found !== "object") continue;
        const hit = found[k];
        texts[ms[k]!] =
          hit && hit.file !== "??"
            ? `${baseName(hit.file)}:${hit.line}`
            : `${baseName(file)}[${addrs[k]!.toString(16)}]`;
      }
    }
    return texts;
  }
}
