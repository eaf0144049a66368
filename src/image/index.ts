export { hex0x } from "../base/halves.js";
export { MAX_SIZE } from "./addr.js";
export {
  buildIdHex,
  ElfError,
  type ElfFile,
  type ElfOptions,
  ElfSection,
  type ElfSegment,
  ElfType,
  lowestLoad,
  MAX_NOTES,
  NT_GNU_BUILD_ID,
  parseElf,
  SectionType,
  SegmentFlag,
  SegmentType,
  segmentFlagsString,
  tryParseElf,
} from "./elf.js";
export { type ElfNeeds, type ReadAt, readElfParts } from "./elf-parts.js";
export { ASID_ANY, type ElfLoadOptions, Image, ImageHit, ImageSet, Section, ZERO_FILL } from "./image.js";
