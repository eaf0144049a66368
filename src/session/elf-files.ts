/**
 * ELF files read in the parts a command needs (image/elf-parts.ts): the symbols of a
 * large program without its code, an image and symbols without the DWARF of a `-g`
 * build or of a kernel's vmlinux. No Node-only API.
 */
import { type ElfNeeds, readElfParts } from "../image/index.js";
import type { SessionIo } from "./io.js";

/** Files smaller than this are read whole: the reads and parses of parts cost more than the bytes. */
const PARTS_FROM = 4 << 20;

/**
 * The bytes of file `path` with the parts of an ELF file that `needs` names read, the
 * rest zeros; a file that is no ELF file, or a small one, whole. Throws as
 * {@link SessionIo.readFile} does.
 */
export function readElf(io: SessionIo, path: string, needs: ElfNeeds): Uint8Array {
  const size = io.fileSize(path);
  if (size < PARTS_FROM) return io.readFile(path);
  const parts = readElfParts(
    size,
    (offset, into, at, length) => {
      if (io.readRangeInto !== undefined) io.readRangeInto(path, offset, into, at, length);
      else into.set(io.readRange(path, offset, length), at);
    },
    needs,
  );
  return parts ?? io.readFile(path);
}
