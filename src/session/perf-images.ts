/**
 * The memory images `ptkit perf` decodes against, from the file's sideband: one
 * process context per pid (libipt-sb's SidebandContext, starting from the kernel
 * image), replayed in time order: MMAP/MMAP2 map the recorded file's bytes from
 * pgoff, COMM exec starts a new address space, FORK copies the parent's, EXIT drops
 * it. Binaries are looked up by `--elf` (same path or file name), the build-id cache
 * (DIR/.build-id/xx/yyyy[/elf], DIR/<path>/<build-id>/elf), `--symfs` + path, then
 * the recorded path. What cannot be found is remembered by address range, so a decode
 * stopping there is charged to it ({@link ProcessImages.charge}). On request, each
 * process image also gets the symbols of its ELF files at their load bias, and the
 * kernel's, for perf script's `name+0xoff (dso)` ({@link ProcessImages.symbol}) and
 * the analysis' frame names ({@link AllProcessSymbols}).
 */
import { IMAGE_AND_SYMBOLS, SYMBOL_SECTIONS, SymbolHit, Symbolizer, SymbolTable } from "../analysis/index.js";
import { splitBigInt, toBigInt } from "../base/halves.js";
import { ElfError, type ElfFile, type Image, ImageHit, tryParseElf } from "../image/index.js";
import { copySections, type PerfTasks, SidebandContext, type TaskChange, type Timed } from "../perf/index.js";
import { lt64 } from "../time/index.js";
import { readElf } from "./elf-files.js";
import type { CodeFile } from "./flow-image.js";
import type { SessionIo } from "./io.js";
import { asDebugFile, debugFileCandidates } from "./perf-debug-files.js";
import type { AllProcessSymbols } from "./perf-frame-symbols.js";
import { objdumpAddress, type SourceAddress } from "./perf-script-srcline.js";
import { SymBytes } from "./sym-bytes.js";

export interface LookupOptions {
  /** --elf files, by recorded path or file name (those with a base are loaded for every process instead). */
  elfs: readonly CodeFile[];
  symfs: string | undefined;
  /** The build-id cache root (~/.debug). */
  buildIdDir: string | undefined;
  /** Where debug files are looked for (perf's /usr/lib/debug: see perf-debug-files.ts); none: not looked for. */
  debugRoot?: string;
  /** Name addresses as perf script does (SymbolTableOptions.perf): perf's PLT stubs, its zero-size symbols' reach. */
  perfNames?: boolean;
}

/** What a missing kernel is called (a front end says how to give it: see InputHints.kernelFiles). */
export const KERNEL_NAME = "[kernel]";

const baseName = (p: string) => p.slice(p.lastIndexOf("/") + 1);

/** Whether --elf `file` stands for the recorded `path`: the same path or file name. */
export function sameBinary(file: string, path: string): boolean {
  return file === path || baseName(file) === baseName(path);
}

/** Finds and reads the binaries a file's mmaps name, once each. */
export class BinaryFinder {
  private readonly cache = new Map<string, Uint8Array | undefined>();
  private readonly elfs = new Map<string, ElfFile | undefined>();
  private readonly tables = new Map<string, SymbolTable | undefined>();

  constructor(
    private readonly io: SessionIo,
    private readonly options: LookupOptions,
    private readonly buildIds: Map<string, string>,
  ) {}

  /** The candidates for a recorded path, in lookup order. */
  candidates(path: string): string[] {
    const { elfs, symfs, buildIdDir } = this.options;
    const out = elfs.flatMap((e) => (e.base === undefined && sameBinary(e.name, path) ? [e.name] : []));
    const id = this.buildIds.get(path);
    if (buildIdDir && id) {
      const link = `${buildIdDir}/.build-id/${id.slice(0, 2)}/${id.slice(2)}`;
      // perf caches the vDSO as [vdso]/<id>/vdso (build_id_cache__basename), other files as <path>/<id>/elf.
      if (/^\[vdso(32|x32)?\]$/.test(path)) out.push(`${link}/vdso`);
      out.push(`${link}/elf`, link, `${buildIdDir}${path}/${id}/elf`);
    }
    // Not files: [vdso], [heap], //anon, ... (only --elf or the build-id cache can stand for them).
    if (!path.startsWith("/") || path.startsWith("//")) return out;
    if (symfs) out.push(`${symfs}${path}`);
    out.push(path);
    return out;
  }

  /** The file read for a recorded path (see {@link read}), if any. */
  localPath(path: string): string | undefined {
    return this.located.get(path);
  }

  private readonly located = new Map<string, string>();

  read(path: string): Uint8Array | undefined {
    if (this.cache.has(path)) return this.cache.get(path);
    let bytes: Uint8Array | undefined;
    for (const c of this.candidates(path)) {
      try {
        bytes = readElf(this.io, c, IMAGE_AND_SYMBOLS);
        this.located.set(path, c);
        break;
      } catch {
        // try the next place
      }
    }
    this.cache.set(path, bytes);
    return bytes;
  }

  buildId(path: string): string | undefined {
    return this.buildIds.get(path);
  }

  /**
   * The symbols of `path` mapped at `addr` from file offset `pgoff` (the load bias
   * is where that offset's PT_LOAD address went), named by the path; undefined when
   * it is not found or not an ELF file. Built once per path and bias.
   */
  symbols(path: string, addr: bigint, pgoff: bigint): SymbolTable | undefined {
    const elf = this.elf(path);
    // perf with --symfs reads binaries under it only: one found at its recorded path has no names there.
    if (this.options.perfNames && this.options.symfs && this.located.get(path) === path) return undefined;
    // The names from a debug file when there is one (perf's order), the code's layout from the binary.
    const named = elf && this.debugFile(path);
    const at = Number(pgoff);
    // The kernel maps a segment from its offset rounded down to a page: pgoff may be
    // before the segment's first byte (an ELF whose code starts right after its headers).
    const seg = elf?.loads.find(
      (l) => l.offset - (l.offset % PAGE) <= at && at < l.offset + Math.max(l.filesz, 1),
    );
    if (!elf || !seg) return undefined;
    const vaddr = toBigInt(seg.vaddrHi, seg.vaddrLo) + BigInt(at - seg.offset);
    const bias = BigInt.asUintN(64, addr - vaddr);
    const key = `${bias.toString(16)}:${path}`;
    if (!this.tables.has(key))
      this.tables.set(
        key,
        new SymbolTable(named ?? elf, {
          name: path,
          bias,
          perf: this.options.perfNames ? { plt: elf } : undefined,
        }),
      );
    return this.tables.get(key);
  }

  /** The ELF file of a recorded path, parsed once; undefined when not found or not ELF. */
  elf(path: string): ElfFile | undefined {
    if (this.elfs.has(path)) return this.elfs.get(path);
    const bytes = this.read(path);
    const parsed = bytes && tryParseElf(bytes, { strict: false });
    const elf = parsed instanceof ElfError ? undefined : parsed;
    this.elfs.set(path, elf);
    return elf;
  }

  private readonly debugFiles = new Map<string, ElfFile | undefined>();

  /** The debug file with `path`'s symbols (see perf-debug-files.ts), once per path. */
  private debugFile(path: string): ElfFile | undefined {
    if (this.debugFiles.has(path)) return this.debugFiles.get(path);
    let found: ElfFile | undefined;
    const { debugRoot, symfs, buildIdDir } = this.options;
    if (debugRoot !== undefined) {
      const id = this.buildIds.get(path);
      for (const c of debugFileCandidates(path, id, { root: debugRoot, symfs, buildIdDir })) {
        try {
          found = asDebugFile(readElf(this.io, c, SYMBOL_SECTIONS), id);
        } catch {
          // not there: the next place
        }
        if (found) break;
      }
    }
    this.debugFiles.set(path, found);
    return found;
  }
}

/** An mmap whose file was not found: [start, end) of process pid. */
interface Missing {
  pid: number;
  /** What a decode stopping there is charged to: the path, and its build id when known. */
  path: string;
  /** The path as recorded ([vdso], //anon, a file not found here): perf script's dso name for it. */
  dso: string;
  /** start and end as Numbers, for lookups that allocate nothing (user-space addresses are below 2^53). */
  from: number;
  to: number;
  /** The mapping's file offset (perf's map_ip of an address there: its offset in the file). */
  pgoff: number;
}

/** perf's name for the kernel's map (recorded as `[kernel.kallsyms]_text` or similar). */
const KERNEL_MAP = "[kernel.kallsyms]";

/** perf script's sym, symoff and dso text ({@link ProcessImages.symbol}: without its leading space). */
const SYMBOL_TEXT = new SymBytes({ sym: true, symoff: true, dso: true });

/** The page size mmaps are aligned to. */
const PAGE = 4096;

/** The last byte of the address space. */
const LAST_BYTE = (1n << 64n) - 1n;

/** Addresses at or above this are the kernel's. */
const KERNEL_HI = 0xffff8000;

/** A replay of the process sideband up to a TSC, for one trace stream. */
export class ProcessImages {
  private readonly contexts = new Map<number, SidebandContext>();
  private readonly symbolizers = new Map<number, Symbolizer>();
  private readonly missing: Missing[] = [];
  private next = 0;
  private readonly symbolHit = new SymbolHit();
  private readonly imageHit = new ImageHit();
  /** When set, the images of processes that exec'd or exited are kept here (for {@link readCode}). */
  retired?: Image[];

  constructor(
    private readonly tasks: PerfTasks,
    private readonly finder: BinaryFinder,
    private readonly kernel: Image,
    private readonly hasKernel: boolean,
    /** Counts of addresses that needed each missing binary, shared by all streams. */
    readonly needed: Map<string, number>,
    /**
     * Symbols wanted (see {@link symbol}): each process image's symbolizer, shared by
     * every stream's replay (which fills it as it maps the binaries).
     */
    private readonly symbols?: AllProcessSymbols,
  ) {}

  /**
   * Where hi:lo is in process pid as perf script -F sym,symoff,dso names it:
   * `name+0xoff (dso)`, `[unknown]` for either part it cannot name.
   */
  symbol(pid: number, hi: number, lo: number): string {
    return SYMBOL_TEXT.text(this, pid, hi, lo).slice(1);
  }

  /** Whether the last {@link parts} found a symbol (then in {@link symbolHit}). */
  partSym = false;
  /** The file the last {@link parts} found the address in. */
  partDso: string | undefined;
  /**
   * The address's offset in that file (perf's map_ip: where perf script's callchains
   * show a user-space address), -1 for a kernel address or one in no file.
   */
  partOffset = -1;

  /** Look hi:lo up in process pid: {@link partSym} (with {@link symbolHit}) and {@link partDso}. */
  parts(pid: number, hi: number, lo: number): SymbolHit {
    const h = this.symbolHit;
    this.partSym = this.symbolizer(pid).lookup(hi, lo, h);
    const found = (hi !== 0 || lo !== 0) && this.image(pid).find(hi, lo, this.imageHit) >= 0;
    this.partOffset = found && hi >>> 0 < KERNEL_HI ? this.imageHit.offset : -1;
    this.partDso = found ? this.imageHit.section!.name : this.unbacked(pid, hi, lo);
    return h;
  }

  /**
   * perf's dso name for hi:lo of process pid where no file backs it: the recorded
   * path of the mapping there ([vdso], //anon, a binary not found here), or
   * [kernel.kallsyms] for a kernel address the file maps; undefined for no mapping.
   * Sets {@link partOffset} for a user-space mapping.
   */
  private unbacked(pid: number, hi: number, lo: number): string | undefined {
    if (hi >>> 0 >= KERNEL_HI) return this.kernelMapped && this.inKernelMaps(hi, lo) ? KERNEL_MAP : undefined;
    const m = this.missingAt(pid, hi, lo);
    if (m === undefined) return undefined;
    this.partOffset = hi * 0x1_0000_0000 + lo - m.from + m.pgoff;
    return m.dso;
  }

  /**
   * The mapping of a binary not found here that hi:lo of process pid is in: the latest
   * (a later mmap replaces what it overlaps, as the dynamic loader's reservation for
   * ld.so is then mapped over by the libraries). User-space addresses are below 2^53.
   */
  private missingAt(pid: number, hi: number, lo: number): Missing | undefined {
    const ip = hi * 0x1_0000_0000 + lo;
    for (let i = this.missing.length - 1; i >= 0; i--) {
      const m = this.missing[i]!;
      if (m.pid === pid && ip >= m.from && ip < m.to) return m;
    }
    return undefined;
  }

  /** Whether the file maps the kernel (a [kernel.kallsyms] mmap). */
  private kernelMapped = false;
  /**
   * The kernel's mmaps (its text and modules) as start and end halves, four words each:
   * a kernel address outside them is in no file (perf's "no map": an error each time,
   * not a missing binary's), such as the entry trampolines' at 0xfffffe0000000000.
   */
  private readonly kernelMaps: number[] = [];

  /** Whether kernel address hi:lo is in one of the file's kernel mmaps (true when it has none: any is). */
  private inKernelMaps(hi: number, lo: number): boolean {
    const k = this.kernelMaps;
    if (k.length === 0) return true;
    for (let i = 0; i < k.length; i += 4)
      if (!lt64(hi >>> 0, lo >>> 0, k[i]!, k[i + 1]!) && lt64(hi >>> 0, lo >>> 0, k[i + 2]!, k[i + 3]!))
        return true;
    return false;
  }

  /** Where hi:lo of process pid is for a source-line lookup: the local binary and perf's objdump address in it. */
  source(pid: number, hi: number, lo: number): SourceAddress | undefined {
    if ((hi === 0 && lo === 0) || this.image(pid).find(hi, lo, this.imageHit) < 0) return undefined;
    const path = this.imageHit.section!.name;
    const file = this.finder.localPath(path);
    const elf = this.finder.elf(path);
    const addr = elf && objdumpAddress(elf, this.imageHit.offset);
    return file !== undefined && addr !== undefined ? { file, addr } : undefined;
  }

  code(pid: number, hi: number, lo: number, out: Uint8Array, size: number): number {
    return Math.max(0, this.image(pid).read(hi, lo, out, size));
  }

  private symbolizer(pid: number): Symbolizer {
    let s = this.symbolizers.get(pid);
    if (!s) {
      s = this.symbols?.image(pid, -1) ?? new Symbolizer();
      this.symbolizers.set(pid, s);
    }
    return s;
  }

  /** Process `pid` gets a new image at the change being applied: its symbols start afresh. */
  private newImage(pid: number): Symbolizer | undefined {
    this.symbolizers.delete(pid);
    const s = this.symbols?.image(pid, this.next);
    if (s) this.symbolizers.set(pid, s);
    return s;
  }

  /**
   * Told before {@link advance} applies changes: the symbols may change (an analysis
   * hands out what it named with the symbols before; see CallAnalysis.release).
   */
  beforeChange: (() => void) | undefined;

  /** Apply the changes due at or before TSC hi:lo; true when any applied. */
  advance(hi: number, lo: number): boolean {
    const changes = this.tasks.changes;
    const from = this.next;
    while (this.next < changes.length) {
      const c = changes[this.next]!;
      if (lt64(hi, lo, c.tscHi, c.tscLo)) break;
      if (this.next === from) this.beforeChange?.();
      this.apply(c);
      this.next++;
    }
    return this.next !== from;
  }

  /** The image of process `pid` as of the last {@link advance}. */
  image(pid: number): Image {
    return this.context(pid).image;
  }

  /**
   * Read code at hi:lo from whichever process image has it (as mapped at the last
   * {@link advance}, then those {@link retired}, then the kernel's): bytes read, 0
   * where none has it.
   */
  readCode(hi: number, lo: number, out: Uint8Array, size: number): number {
    for (const image of [
      ...[...this.contexts.values()].map((c) => c.image),
      ...(this.retired ?? []),
      this.kernel,
    ]) {
      const n = image.read(hi, lo, out, size);
      if (n > 0) return n;
    }
    return 0;
  }

  /**
   * Charge a decode stopping at ip hi:lo in process pid to the binary that was missing
   * there: how many stops it has been charged so far, this one included (0: none was missing there).
   */
  charge(pid: number, hi: number, lo: number): number {
    let name: string | undefined;
    if (hi >>> 0 >= KERNEL_HI) name = this.hasKernel || !this.inKernelMaps(hi, lo) ? undefined : KERNEL_NAME;
    else name = this.missingAt(pid, hi, lo)?.path;
    if (name === undefined) return 0;
    const n = (this.needed.get(name) ?? 0) + 1;
    this.needed.set(name, n);
    return n;
  }

  private context(pid: number): SidebandContext {
    let c = this.contexts.get(pid);
    if (!c) {
      c = new SidebandContext(pid, this.kernel);
      this.contexts.set(pid, c);
    }
    return c;
  }

  private apply(c: Timed<TaskChange>): void {
    switch (c.kind) {
      case "exec":
        this.retire(c.pid);
        this.newImage(c.pid);
        this.dropMissing(c.pid);
        break;
      case "exit":
        this.retire(c.pid);
        this.symbolizers.delete(c.pid);
        break;
      case "fork": {
        const parent = this.contexts.get(c.ppid);
        const child = new SidebandContext(c.pid, this.kernel);
        if (parent) copySections(child.image, parent.image);
        this.contexts.set(c.pid, child);
        const symbols = this.symbolizers.get(c.ppid);
        const copy = this.newImage(c.pid);
        if (symbols && copy) for (const t of symbols.modules) if (!copy.modules.includes(t)) copy.add(t);
        for (const m of this.missing.filter((m) => m.pid === c.ppid)) this.missing.push({ ...m, pid: c.pid });
        break;
      }
      case "mmap":
        if (c.pid >= 0) this.mmap(c.pid, c.path, c.addr, c.len, c.pgoff);
        else {
          if (c.path.startsWith(KERNEL_MAP)) this.kernelMapped = true;
          const from = splitBigInt(c.addr, { hi: 0, lo: 0 });
          // (An end at or past 2^64 ends at its last byte.)
          const end = c.addr + c.len > LAST_BYTE ? LAST_BYTE : c.addr + c.len;
          const to = splitBigInt(end, { hi: 0, lo: 0 });
          this.kernelMaps.push(from.hi, from.lo, to.hi, to.lo);
        }
        break;
    }
  }

  private retire(pid: number): void {
    const image = this.contexts.get(pid)?.image;
    if (image !== undefined) this.retired?.push(image);
    this.contexts.delete(pid);
  }

  private dropMissing(pid: number): void {
    for (let i = this.missing.length - 1; i >= 0; i--)
      if (this.missing[i]!.pid === pid) this.missing.splice(i, 1);
  }

  /**
   * A binary not found here is mapped at [addr, end) of process pid: what an earlier
   * mmap put there is not mapped any more (as perf's later map replaces what it
   * overlaps: the dynamic loader's reservation for ld.so, mapped over by the libraries),
   * so its code is not read there. What every process has stays (the kernel image's
   * sections: --elf files no mmap names, loaded at their own addresses).
   */
  private unmap(pid: number, addr: bigint, end: bigint): void {
    const len = end - addr;
    if (len <= 0n || len > BigInt(Number.MAX_SAFE_INTEGER)) return;
    const image = this.context(pid).image;
    const at = splitBigInt(addr, { hi: 0, lo: 0 });
    if (image.removeRange(at.hi, at.lo, Number(len)) <= 0) return;
    // Their parts in [addr, end) again (elsewhere the image keeps what it has).
    for (const s of this.kernel.sections) {
      const start = toBigInt(s.startHi, s.startLo);
      const from = start > addr ? start : addr;
      const to = start + BigInt(s.size) < end ? start + BigInt(s.size) : end;
      if (from >= to) continue;
      const skip = Number(from - start);
      const place = splitBigInt(from, { hi: 0, lo: 0 });
      const bytes = s.bytes;
      image.addSection(
        s.name,
        bytes,
        bytes === null ? 0 : s.offset + skip,
        Number(to - from),
        place.hi,
        place.lo,
        s.flags,
      );
    }
  }

  private mmap(pid: number, path: string, addr: bigint, len: bigint, pgoff: bigint): void {
    const bytes = this.finder.read(path);
    const fileSize = BigInt(bytes?.length ?? 0);
    if (!bytes || pgoff >= fileSize) {
      const id = this.finder.buildId(path);
      const end = addr + len;
      this.unmap(pid, addr, end);
      const charged = id ? `${path} (build id ${id})` : path;
      this.missing.push({
        pid,
        path: charged,
        dso: path,
        from: Number(addr),
        to: Number(end),
        pgoff: Number(pgoff),
      });
      return;
    }
    // Like libipt: a size past the end of the file is cut to the file.
    const n = len < fileSize - pgoff ? len : fileSize - pgoff;
    const at = splitBigInt(addr, { hi: 0, lo: 0 });
    this.context(pid).image.addSection(path, bytes, Number(pgoff), Number(n), at.hi, at.lo);
    if (!this.symbols) return;
    const table = this.finder.symbols(path, addr, pgoff);
    if (!table) return;
    const symbols = this.symbolizer(pid);
    if (!symbols.modules.includes(table)) symbols.add(table);
  }
}
