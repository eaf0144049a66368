/**
 * `ptkit simulate`'s output to memory: a single output range (`--single-range
 * BASE:SIZE`) or a ToPA ring (`--topa SIZES`) in simulated physical memory, the trace
 * read back from it in write order, and the memory image written out.
 *
 * `--topa` takes region sizes (4K .. 128M, powers of two, with K/M suffixes) each
 * optionally marked `+int` and/or `+stop`, for example `4K,8K+int,4K+stop`. The table is
 * at physical 0x100000 (its entries, then an END entry pointing back to it: a ring), the
 * regions follow it, each aligned to its size.
 *
 * `--memory PREFIX` writes `PREFIX.json` (the layout, the output MSRs when tracing began
 * and ended, what the read-back found) and one raw file per region (`PREFIX.region<i>.bin`)
 * and for the table (`PREFIX.table.bin`).
 */
import {
  Msr,
  type MsrFile,
  OutputUnit,
  PhysMemory,
  type ReadOutputResult,
  readOutput,
  topaRegionSize,
  writeTopaTable,
} from "../../unit/index.js";
import { parseSize } from "../numbers.js";

export const TOPA_TABLE_BASE = 0x100000;

export type OutputLayout =
  | { kind: "single-range"; base: number; size: number }
  | { kind: "topa"; regions: { base: number; sizeCode: number; int: boolean; stop: boolean }[] };

/** `BASE:SIZE`: SIZE a power of two of at least 128 bytes, BASE aligned to it. */
export function parseSingleRange(text: string): OutputLayout | string {
  const [b, s, extra] = text.split(":");
  const base = b === undefined ? undefined : parseSize(b);
  const size = s === undefined ? undefined : parseSize(s);
  if (extra !== undefined || base === undefined || size === undefined)
    return `--single-range: '${text}' is not BASE:SIZE`;
  if (size < 128 || size > 2 ** 32 || (size & (size - 1)) !== 0)
    return `--single-range: the size ${size} is not a power of two from 128 to 4G`;
  if (base % size !== 0) return `--single-range: the base 0x${base.toString(16)} is not aligned to the size`;
  return { kind: "single-range", base, size };
}

/** `SIZE[+int][+stop],...` (see the module comment). */
export function parseTopa(text: string): OutputLayout | string {
  const regions: { base: number; sizeCode: number; int: boolean; stop: boolean }[] = [];
  const items = text.split(",");
  // The table: one entry per region and the END entry, in whole 4K pages.
  let next = TOPA_TABLE_BASE + Math.ceil((8 * (items.length + 1)) / 4096) * 4096;
  for (const item of items) {
    const [sizeText, ...flags] = item.split("+");
    const size = parseSize(sizeText ?? "");
    const code = size === undefined ? -1 : Math.log2(size / 4096);
    if (!Number.isInteger(code) || code < 0 || code > 15)
      return `--topa: '${sizeText}' is not a region size (4K, 8K, ... 128M)`;
    const bad = flags.find((f) => f !== "int" && f !== "stop");
    if (bad !== undefined) return `--topa: '+${bad}' is not +int or +stop`;
    const base = Math.ceil(next / size!) * size!;
    regions.push({ base, sizeCode: code, int: flags.includes("int"), stop: flags.includes("stop") });
    next = base + size!;
  }
  return { kind: "topa", regions };
}

/** The OUTPUT_BASE and OUTPUT_MASK_PTRS values that start output at the layout's beginning. */
export function layoutRegisters(layout: OutputLayout): { outputBase: bigint; outputMaskPtrs: bigint } {
  if (layout.kind === "topa") return { outputBase: BigInt(TOPA_TABLE_BASE), outputMaskPtrs: 0x7fn };
  return { outputBase: BigInt(layout.base), outputMaskPtrs: BigInt(layout.size - 1) | 0x7fn };
}

/** The memory behind a layout, and the output unit writing into it. */
export class MemoryOutput {
  readonly memory = new PhysMemory();
  readonly unit: OutputUnit;
  private readonly start: { outputBase: bigint; outputMaskPtrs: bigint };

  constructor(
    readonly layout: OutputLayout,
    private readonly msrs: MsrFile,
  ) {
    this.unit = new OutputUnit(msrs, this.memory);
    this.start = layoutRegisters(layout);
    if (layout.kind === "topa") {
      writeTopaTable(this.memory, TOPA_TABLE_BASE, [
        ...layout.regions.map((r) => ({ base: r.base, size: r.sizeCode, int: r.int, stop: r.stop })),
        { base: TOPA_TABLE_BASE, end: true },
      ]);
    }
  }

  /** The trace as written, oldest byte first (after tracing ended). */
  readBack(): ReadOutputResult {
    return readOutput({
      memory: this.memory,
      caps: this.msrs.caps,
      toPA: this.layout.kind === "topa",
      final: { outputBase: this.read(Msr.OutputBase), outputMaskPtrs: this.read(Msr.OutputMaskPtrs) },
      start: this.start,
    });
  }

  /** The files of `--memory PREFIX`: name suffix and contents. */
  files(prefix: string, back: ReadOutputResult): { name: string; bytes: Uint8Array }[] {
    const hex = (v: bigint | number) => `0x${v.toString(16)}`;
    const out: { name: string; bytes: Uint8Array }[] = [];
    const regions =
      this.layout.kind === "topa"
        ? this.layout.regions.map((r) => ({
            base: r.base,
            size: topaRegionSize(r.sizeCode),
            int: r.int,
            stop: r.stop,
          }))
        : [{ base: this.layout.base, size: this.layout.size, int: false, stop: false }];
    const described = regions.map((r, i) => {
      const file = `${prefix}.region${i}.bin`;
      out.push({ name: file, bytes: this.memory.read(r.base, r.size) });
      return { base: hex(r.base), size: r.size, int: r.int, stop: r.stop, file };
    });
    let table: { base: string; entries: number; file: string } | undefined;
    if (this.layout.kind === "topa") {
      const entries = this.layout.regions.length + 1;
      table = { base: hex(TOPA_TABLE_BASE), entries, file: `${prefix}.table.bin` };
      out.push({ name: table.file, bytes: this.memory.read(TOPA_TABLE_BASE, 8 * entries) });
    }
    const json = {
      output: this.layout.kind,
      table,
      regions: described,
      start: { outputBase: hex(this.start.outputBase), outputMaskPtrs: hex(this.start.outputMaskPtrs) },
      final: {
        outputBase: hex(this.read(Msr.OutputBase)),
        outputMaskPtrs: hex(this.read(Msr.OutputMaskPtrs)),
        status: hex(this.read(Msr.Status)),
      },
      wrapped: back.wrapped,
      traceBytes: back.bytes.length,
      skippedBytes: back.skipped,
      cutByStop: back.cutByStop.map((s) => ({ regionBase: hex(s.regionBase), index: s.index })),
      error: this.unit.lastError ?? undefined,
    };
    out.push({
      name: `${prefix}.json`,
      bytes: new TextEncoder().encode(`${JSON.stringify(json, null, 2)}\n`),
    });
    return out;
  }

  private read(msr: number): bigint {
    const v = this.msrs.readMsr(msr);
    return typeof v === "bigint" ? v : 0n;
  }
}
