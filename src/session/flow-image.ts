/**
 * The code `ptkit flow` decodes against: `--raw` dumps and `--elf` files loaded into one
 * memory image the way ptxed loads them (`--raw file[:from[-to]]:base`, `--elf
 * file[:base]` mapping only each PT_LOAD's file bytes, a base of 0 meaning none).
 * Problems are returned as messages without the program name.
 */
import { IMAGE_AND_SYMBOLS } from "../analysis/elf-needs.js";
import { diagnosticLine } from "../base/diagnostic.js";
import { parseCUint } from "../cpu/index.js";
import { ElfError, type ElfFile, hex0x, type Image, tryParseElf } from "../image/index.js";
import { ErrorCode, errorMessage, splitBigInt } from "../packet/index.js";
import { readElf } from "./elf-files.js";
import { ioErrorText } from "./file-kind.js";
import { type FileRange, parseFileRange } from "./file-range.js";
import type { SessionIo } from "./io.js";

const U64_MAX = 0xffff_ffff_ffff_ffffn;

/** `name:base` split at the last ':' when the suffix is a number, as ptxed's extract_base does. */
export function splitBase(arg: string): { name: string; base: bigint | undefined } {
  const colon = arg.lastIndexOf(":");
  if (colon < 0) return { name: arg, base: undefined };
  const base = parseCUint(arg.slice(colon + 1));
  if (base === undefined || base > U64_MAX) return { name: arg, base: undefined };
  return { name: arg.slice(0, colon), base };
}

function hex(n: bigint | number): string {
  return `0x${n.toString(16)}`;
}

/** A file of code to load: an ELF file at `base` (its lowest segment there; undefined or 0: its own addresses). */
export interface CodeFile {
  name: string;
  base: bigint | undefined;
}

/**
 * Raw bytes of memory to load: the bytes [from, to) of a file (to the end when `to` is
 * undefined) at `base`.
 */
export interface RawBytes {
  range: FileRange;
  base: bigint;
}

/**
 * ptxed's `file[:from[-to]]:base` (`--raw`): the base is required. Undefined when the
 * base does not parse, the error message of a bad range.
 */
export function parseRawBytes(arg: string): RawBytes | string | undefined {
  const { name, base } = splitBase(arg);
  if (base === undefined) return undefined;
  const range = parseFileRange(name);
  return typeof range === "string" ? range : { range, base };
}

/** ptxed's `file[:base]` (`--elf`, `--symbols`): the base split off when it is a number. */
export function parseCodeFile(arg: string): CodeFile {
  return splitBase(arg);
}

/** Map the raw bytes `raw` into `image`; returns an error message or undefined. */
export function loadRaw(io: SessionIo, image: Image, raw: RawBytes): string | undefined {
  const { range, base } = raw;
  const what = `failed to add ${range.path} at ${hex(base)}`;
  let size: number;
  try {
    size = io.fileSize(range.path);
  } catch (e) {
    return `${what}: ${errorMessage(ErrorCode.BadFile)}: ${ioErrorText(e)}.`;
  }
  if (range.from >= size)
    return `${what}: invalid argument: offset ${hex(range.from)} is not below the file size ${hex(size)}.`;
  // Like libipt, a range past the end of the file is cut to the file.
  const end = Math.min(range.to ?? size, size);
  const bytes = io.readRange(range.path, range.from, end - range.from);
  const at = splitBigInt(base, { hi: 0, lo: 0 });
  const status = image.addSection(range.path, bytes, 0, bytes.length, at.hi, at.lo);
  if (status < 0) return `${what}: ${errorMessage(status)}: ${hex(bytes.length)} bytes would wrap past 2^64.`;
  return undefined;
}

/**
 * The ELF file `file`, parsed leniently (section headers and notes do not matter for
 * mapping code or reading symbols), or an error message. Read without its DWARF
 * (elf-files.ts): its loadable segments and symbols are all that is used of it.
 */
export function readCodeFile(io: SessionIo, file: CodeFile): ElfFile | string {
  const { name } = file;
  let bytes: Uint8Array;
  try {
    bytes = readElf(io, name, IMAGE_AND_SYMBOLS);
  } catch (e) {
    return `failed to open ${name}: ${ioErrorText(e)}.`;
  }
  const elf = tryParseElf(bytes, { strict: false });
  return elf instanceof ElfError ? `${diagnosticLine(name, elf)}.` : elf;
}

/**
 * Map the PT_LOAD segments of the ELF file `file` into `image` (file bytes only, as ptxed
 * does). `verbose`, if given, gets each mapped segment as ptxed's --verbose prints it. Returns an
 * error message or undefined; `warn` gets what ptxed warns about but survives.
 */
export function loadElf(
  io: SessionIo,
  image: Image,
  file: CodeFile,
  verbose: ((line: string) => void) | undefined,
  warn: (text: string) => void,
): string | undefined {
  const elf = readCodeFile(io, file);
  return typeof elf === "string" ? elf : mapElf(image, elf, file, verbose, warn);
}

/** {@link loadElf} of `elf`, read from `file` already ({@link readCodeFile}). */
export function mapElf(
  image: Image,
  elf: ElfFile,
  file: CodeFile,
  verbose: ((line: string) => void) | undefined,
  warn: (text: string) => void,
): string | undefined {
  const { name, base } = file;
  const options: { name: string; zeroFill: boolean; baseHi?: number; baseLo?: number } = {
    name,
    zeroFill: false,
  };
  if (base) {
    const at = splitBigInt(base, { hi: 0, lo: 0 });
    options.baseHi = at.hi;
    options.baseLo = at.lo;
  }
  const added = image.addElf(elf, options);
  if (added < 0)
    return `${name}: ${errorMessage(added)}: a segment would wrap past 2^64 at base ${hex(base ?? 0n)}.`;
  const mapped = elf.loads.filter((s) => s.filesz > 0);
  if (mapped.length === 0) warn(`warning: ${name}: did not find any load sections.`);
  for (const s of mapped) {
    verbose?.(`${name}: offset=${hex(s.offset)} size=${hex(s.filesz)} vaddr=${hex0x(s.vaddrHi, s.vaddrLo)}.`);
  }
  return undefined;
}
