/**
 * Function names for the analysis outputs of `ptkit flow`, on by default (as perf
 * names functions without being asked): from the symbol tables of the code the decode
 * loads, and of extra files given with `--symbols FILE[:BASE]`.
 *
 * - `--elf file[:base]`: the file's symbols at the load bias its base implies (base
 *   minus the lowest PT_LOAD address; no base, no bias), as the decoder maps it.
 * - `--raw file[:from[-to]]:base` whose file is an ELF file (e.g. an executable
 *   segment, as `ptkit simulate` used to print them): its symbols at the bias that puts
 *   file offset `from` at `base`, through the PT_LOAD segment holding that offset.
 * - `--symbols file[:base]`: symbols only (an unstripped copy or a debug file of a
 *   stripped program), at the bias computed as for `--elf`.
 *
 * Where a frame still gets an address for a name, {@link CodeSymbols.unnamed} says
 * why once per code region, with the remedy: raw bytes that are not an ELF file, a
 * stripped ELF file (no .symtab), or code that no file given holds.
 */
import { type NameDemangler, SYMBOL_SECTIONS, Symbolizer, SymbolTable } from "../analysis/index.js";
import { ElfError, type ElfFile, lowestLoad, SectionType, tryParseElf } from "../image/index.js";
import { toBigInt } from "../packet/index.js";
import { readElf } from "./elf-files.js";
import { type CodeFile, type RawBytes, readCodeFile } from "./flow-image.js";
import { type InputHints, withHint } from "./hints.js";
import type { SessionIo } from "./io.js";

const MASK64 = 0xffff_ffff_ffff_ffffn;

/** Code loaded for the decode (an ELF file, raw bytes) or symbols alone (`--symbols`). */
export type SymbolSource = { kind: "elf" | "symbols"; file: CodeFile } | { kind: "raw"; raw: RawBytes };

/** Why frames in a region cannot be named, and what to do. */
interface Problem {
  why: string;
  remedy: string;
}

/** A range of loaded code [start, end) and, when its frames cannot be named, why. */
interface Region {
  start: bigint;
  end: bigint;
  problem: Problem | undefined;
}

const hex = (n: bigint) => `0x${n.toString(16)}`;

export interface CodeSymbolsOptions {
  /** Told once per region where frames go unnamed, why and what to do. */
  warn?: (text: string) => void;
  /** Names C++ and Rust symbols. */
  demangler?: NameDemangler;
  /** The front end's remedies in those warnings. */
  hints?: InputHints;
}

/** The symbols of the code a decode loads, and where frames must go without names. */
export class CodeSymbols {
  readonly symbolizer: Symbolizer;
  private readonly regions: Region[] = [];
  /** Where symbols-only files put their symbols: they name the code regions they overlap. */
  private readonly named: { start: bigint; end: bigint }[] = [];
  private readonly tables = new Set<string>();
  private readonly reported = new Set<Region | "nowhere">();

  private readonly warn: ((text: string) => void) | undefined;
  /** The front end's remedies (see hints.ts). */
  readonly hints: InputHints;

  constructor(options: CodeSymbolsOptions = {}) {
    this.warn = options.warn;
    this.hints = options.hints ?? {};
    this.symbolizer = new Symbolizer({ demangler: options.demangler });
  }

  /**
   * A frame at (hi:lo) is named by its address (no symbol covers it): say why, once per
   * region (an ELF file with a symbol table that misses an address says nothing).
   */
  unnamed(hi: number, lo: number): void {
    if (this.warn === undefined) return;
    const at = toBigInt(hi, lo);
    // The last region loaded wins where regions overlap, as in the image.
    let region: Region | undefined;
    for (let k = this.regions.length - 1; k >= 0 && region === undefined; k--) {
      const r = this.regions[k]!;
      if (r.start <= at && at < r.end) region = r;
    }
    const key = region ?? "nowhere";
    if (this.reported.has(key)) return;
    if (region !== undefined && (region.problem === undefined || this.overlapsNamed(region))) return;
    this.reported.add(key);
    this.warn(
      region === undefined
        ? `no symbols for ${hex(at)}: no ${this.hints.codeFiles ?? "file of code given"} holds it (code from the sideband?), so frames there are named by address; ${addSymbols(this.hints)}.`
        : `${region.problem!.why} (first at ${hex(at)}); ${region.problem!.remedy}.`,
    );
  }

  private overlapsNamed(r: Region): boolean {
    return this.named.some((n) => n.start < r.end && r.start < n.end);
  }

  /** Add `elf`'s symbols at `bias`, once per file and bias (several ranges of one file share them). */
  addTable(name: string, elf: ElfFile, bias: bigint): SymbolTable | undefined {
    const key = `${bias}:${name}`;
    if (this.tables.has(key)) return undefined;
    this.tables.add(key);
    const table = new SymbolTable(elf, { name, bias });
    this.symbolizer.add(table);
    return table;
  }

  addRegion(start: bigint, end: bigint, problem: Problem | undefined): void {
    this.regions.push({ start, end, problem });
  }

  addNamed(start: bigint, end: bigint): void {
    this.named.push({ start, end });
  }
}

/** The address range of `elf`'s loaded segments at `bias`. */
function loadRange(elf: ElfFile, bias: bigint): { start: bigint; end: bigint } {
  let start = MASK64;
  let end = 0n;
  for (const s of elf.loads) {
    const a = toBigInt(s.vaddrHi, s.vaddrLo);
    if (a < start) start = a;
    if (a + BigInt(s.memsz) > end) end = a + BigInt(s.memsz);
  }
  return { start: (start + bias) & MASK64, end: end + bias };
}

const hasSymtab = (elf: ElfFile) => elf.sections.some((s) => s.type === SectionType.Symtab);

function strippedProblem(name: string, hints: InputHints): Problem {
  return {
    why: `${name} has no symbol table (stripped): its functions without a dynamic symbol are named by address`,
    remedy: `pass an unstripped copy or its debug file${withHint(hints.symbolsFile)}`,
  };
}

/** The remedy for code without symbols. */
const addSymbols = (hints: InputHints) => `add its symbols${withHint(hints.symbolsFile)}`;

/** `--elf` and `--symbols`: the file's symbols at the bias its base implies. */
function addElf(
  io: SessionIo,
  code: CodeSymbols,
  source: Extract<SymbolSource, { kind: "elf" | "symbols" }>,
): string | undefined {
  const elf = readCodeFile(io, source.file);
  if (typeof elf === "string") return `cannot read symbols: ${elf}`;
  const { name, base } = source.file;
  const low = lowestLoad(elf);
  const bias = base && low ? (base - toBigInt(low.hi, low.lo)) & MASK64 : 0n;
  code.addTable(name, elf, bias);
  const range = loadRange(elf, bias);
  if (source.kind === "symbols") {
    if (hasSymtab(elf)) code.addNamed(range.start, range.end);
  } else
    code.addRegion(range.start, range.end, hasSymtab(elf) ? undefined : strippedProblem(name, code.hints));
  return undefined;
}

/** `--raw file[:from[-to]]:base`: symbols when the file is an ELF file. */
function addRaw(io: SessionIo, code: CodeSymbols, raw: RawBytes): void {
  const { range, base } = raw;
  let size: number;
  let elf: ElfFile | ElfError | undefined;
  try {
    size = io.fileSize(range.path);
    const magic = io.readRange(range.path, 0, 4);
    if (magic[0] === 0x7f && magic[1] === 0x45 && magic[2] === 0x4c && magic[3] === 0x46)
      elf = tryParseElf(readElf(io, range.path, SYMBOL_SECTIONS), { strict: false });
  } catch {
    return;
  }
  const end = base + BigInt(Math.min(range.to ?? size, size) - range.from);
  const segment =
    elf instanceof ElfError || elf === undefined
      ? undefined
      : elf.loads.find((s) => s.offset <= range.from && range.from < s.offset + s.filesz);
  if (elf === undefined || elf instanceof ElfError || segment === undefined) {
    const what = elf === undefined ? "raw bytes, not an ELF file" : "no ELF segment holds these bytes";
    code.addRegion(base, end, {
      why: `no symbols for ${hex(base)}-${hex(end)} (${range.path}: ${what}): frames there are named by address`,
      remedy: `load the ELF file the code comes from${withHint(code.hints.elfFile)}, or ${addSymbols(code.hints)}`,
    });
    return;
  }
  const linked = toBigInt(segment.vaddrHi, segment.vaddrLo) + BigInt(range.from - segment.offset);
  code.addTable(range.path, elf, (base - linked) & MASK64);
  code.addRegion(base, end, hasSymtab(elf) ? undefined : strippedProblem(range.path, code.hints));
}

/**
 * The symbols of `sources` (in any order), or an error message.
 */
export function loadCodeSymbols(
  io: SessionIo,
  sources: readonly SymbolSource[],
  options: CodeSymbolsOptions = {},
): CodeSymbols | string {
  const code = new CodeSymbols(options);
  for (const source of sources) {
    if (source.kind === "raw") addRaw(io, code, source.raw);
    else {
      const problem = addElf(io, code, source);
      if (problem !== undefined) return problem;
    }
  }
  return code;
}
