/**
 * Physical memory as a sparse map of 4 KiB pages: a page exists only once something
 * is written to it, so a 128 MiB output region costs nothing until trace reaches it.
 * Addresses are non-negative integers below 2^53 (MAXPHYADDR is at most 52).
 */

export const PAGE_SIZE = 4096;
const PAGE_SHIFT_DIV = PAGE_SIZE;

export class PhysMemory {
  /** Page number (address / 4096) -> the page's bytes. */
  private readonly pages = new Map<number, Uint8Array>();

  /** Number of pages that exist (have been written). */
  get pageCount(): number {
    return this.pages.size;
  }

  /** The page numbers that exist, ascending. */
  pageNumbers(): number[] {
    return [...this.pages.keys()].sort((a, b) => a - b);
  }

  /**
   * Walk `[addr, addr + length)` page by page: `visit(pageNumber, offsetInPage, chunk,
   * offsetInRange)`; stops early (returning true) when `visit` returns true.
   */
  private walk(
    addr: number,
    length: number,
    visit: (pn: number, off: number, chunk: number, done: number) => boolean | undefined,
  ): boolean {
    checkRange(addr, length);
    let done = 0;
    while (done < length) {
      const a = addr + done;
      const pn = Math.floor(a / PAGE_SHIFT_DIV);
      const off = a - pn * PAGE_SIZE;
      const chunk = Math.min(length - done, PAGE_SIZE - off);
      if (visit(pn, off, chunk, done)) return true;
      done += chunk;
    }
    return false;
  }

  /** Copy `length` bytes of `src` from `srcOffset` to physical address `addr`. */
  write(addr: number, src: Uint8Array, srcOffset = 0, length = src.length - srcOffset): void {
    this.walk(addr, length, (pn, off, chunk, done) => {
      let page = this.pages.get(pn);
      if (page === undefined) {
        page = new Uint8Array(PAGE_SIZE);
        this.pages.set(pn, page);
      }
      page.set(src.subarray(srcOffset + done, srcOffset + done + chunk), off);
      return false;
    });
  }

  /** Read `length` bytes at `addr` into `out` at `outOffset` (bytes never written read as 0). */
  readInto(addr: number, length: number, out: Uint8Array, outOffset = 0): Uint8Array {
    this.walk(addr, length, (pn, off, chunk, done) => {
      const page = this.pages.get(pn);
      const o = outOffset + done;
      if (page === undefined) out.fill(0, o, o + chunk);
      else out.set(page.subarray(off, off + chunk), o);
      return false;
    });
    return out;
  }

  /** A copy of `length` bytes at `addr`. */
  read(addr: number, length: number): Uint8Array {
    return this.readInto(addr, length, new Uint8Array(length));
  }

  /** Whether any byte in `[addr, addr + length)` is non-zero; skips pages never written. */
  anyNonZero(addr: number, length: number): boolean {
    return this.walk(addr, length, (pn, off, chunk) => {
      const page = this.pages.get(pn);
      if (page === undefined) return false;
      for (let i = off; i < off + chunk; i++) if (page[i] !== 0) return true;
      return false;
    });
  }

  /** Little-endian 32-bit read (unsigned). */
  readU32(addr: number): number {
    const b = this.read(addr, 4);
    return (b[0]! | (b[1]! << 8) | (b[2]! << 16) | (b[3]! << 24)) >>> 0;
  }

  /** Little-endian 32-bit write. */
  writeU32(addr: number, value: number): void {
    const b = new Uint8Array(4);
    b[0] = value & 0xff;
    b[1] = (value >>> 8) & 0xff;
    b[2] = (value >>> 16) & 0xff;
    b[3] = (value >>> 24) & 0xff;
    this.write(addr, b);
  }

  /** Little-endian 64-bit write of a value given as halves. */
  writeU64(addr: number, hi: number, lo: number): void {
    this.writeU32(addr, lo);
    this.writeU32(addr + 4, hi);
  }

  /** Drop every page. */
  clear(): void {
    this.pages.clear();
  }
}

function checkRange(addr: number, length: number): void {
  if (!Number.isSafeInteger(addr) || addr < 0 || !Number.isSafeInteger(length) || length < 0) {
    throw new RangeError(`physical range ${addr} + ${length} is not a non-negative safe integer range`);
  }
  if (addr + length > 2 ** 52) throw new RangeError(`physical range ends above 2^52: ${addr} + ${length}`);
}
