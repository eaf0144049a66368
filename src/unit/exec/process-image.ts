/**
 * The memory of a process run under valgrind: the ELF objects its lackey log reports
 * (each PT_LOAD at p_vaddr + the load bias) plus the stand-in kernel's code, as a
 * ptkit {@link Image} for classifying instructions and decoding traces, and as
 * `file:from-to:address` ranges for ptxed's `--raw` and the libipt harness's `--map`.
 */

import { splitBigInt, toBigInt } from "../../base/halves.js";
import { ElfError, Image, lowestLoad, SegmentFlag, tryParseElf } from "../../image/index.js";
import { KERNEL_BASE_HI, KERNEL_BASE_LO, KERNEL_CODE } from "./lackey-kernel.js";
import type { LoadedSegment } from "./perf-env.js";

const U64 = (1n << 64n) - 1n;

/** Where the stand-in kernel's code ({@link KERNEL_CODE}) is mapped. */
export const KERNEL_ADDRESS = toBigInt(KERNEL_BASE_HI, KERNEL_BASE_LO);
export { KERNEL_CODE };

/** A file range mapped at an address. */
export interface MappedRange {
  path: string;
  /** File offset and size of the bytes mapped. */
  offset: number;
  size: number;
  address: bigint;
}

export class ProcessImage {
  readonly image = new Image("process");
  /** The executable file ranges mapped, in mapping order (later ones win where they overlap). */
  readonly ranges: MappedRange[] = [];
  /** The ELF files mapped, in mapping order, each with its load bias. */
  readonly objects: { path: string; bias: bigint; base: bigint }[] = [];
  /** Every PT_LOAD mapped, as addresses below 2^53 (perf-env.ts's page faults). */
  readonly segments: LoadedSegment[] = [];
  /** Objects that could not be mapped, with why. */
  readonly problems: string[] = [];

  constructor(private readonly readFile: (path: string) => Uint8Array) {
    this.image.addSection("kernel", KERNEL_CODE, 0, KERNEL_CODE.length, KERNEL_BASE_HI, KERNEL_BASE_LO);
  }

  /** Map the ELF file at `path` with load bias `bias` (what {@link LackeyOptions.onObject} reports). */
  map(path: string, bias: bigint): void {
    let bytes: Uint8Array;
    try {
      bytes = this.readFile(path);
    } catch (e) {
      this.problems.push(`${path}: ${(e as Error).message}`);
      return;
    }
    // Sections and notes do not matter for mapping code.
    const elf = tryParseElf(bytes, { strict: false });
    if (elf instanceof ElfError) {
      this.problems.push(`${path}: ${elf.message}`);
      return;
    }
    const low = lowestLoad(elf);
    if (low === undefined) {
      this.problems.push(`${path}: no PT_LOAD segments`);
      return;
    }
    const base = splitBigInt((toBigInt(low.hi, low.lo) + bias) & U64, { hi: 0, lo: 0 });
    if (this.image.addElf(elf, { name: path, baseHi: base.hi, baseLo: base.lo, zeroFill: false }) < 0) {
      this.problems.push(`${path}: a segment would wrap past 2^64 with load bias 0x${bias.toString(16)}`);
      return;
    }
    this.objects.push({ path, bias, base: toBigInt(base.hi, base.lo) });
    for (const s of elf.loads) {
      const start = Number((toBigInt(s.vaddrHi, s.vaddrLo) + bias) & U64);
      if (start + s.memsz <= Number.MAX_SAFE_INTEGER)
        this.segments.push({ start, fileEnd: start + s.filesz, end: start + s.memsz });
    }
    // Only code matters to decoders.
    for (const s of elf.loads) {
      if (s.filesz === 0 || !(s.flags & SegmentFlag.X)) continue;
      const address = (toBigInt(s.vaddrHi, s.vaddrLo) + bias) & U64;
      this.ranges.push({ path, offset: s.offset, size: s.filesz, address });
    }
  }

  /**
   * The image as ptxed/ptkit flow options (words): the stand-in kernel's ELF file (written to
   * `kernelFile`, see simulate-kernel.ts) and each object as `--elf file[:base]`, base
   * being where its lowest PT_LOAD went (none when it went to its link address). Unlike
   * `--raw` ranges, these name the files whose symbols name functions.
   */
  elfArgs(kernelFile: string): string[] {
    return [
      "--elf",
      kernelFile,
      ...this.objects.flatMap((o) => [
        "--elf",
        `${o.path}${o.bias === 0n ? "" : `:0x${o.base.toString(16)}`}`,
      ]),
    ];
  }

  /**
   * The mapped ranges as `file:from-to:address` arguments (ptxed `--raw`, harness
   * `--map`), with the kernel's code ({@link KERNEL_CODE} written to `kernelFile`) first.
   */
  rawArgs(kernelFile: string): string[] {
    const hex = (n: bigint | number) => `0x${n.toString(16)}`;
    return [
      `${kernelFile}:${hex(KERNEL_ADDRESS)}`,
      ...this.ranges.map((r) => `${r.path}:${hex(r.offset)}-${hex(r.offset + r.size)}:${hex(r.address)}`),
    ];
  }
}
