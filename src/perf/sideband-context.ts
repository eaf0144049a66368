/**
 * A process context of a sideband session, as libipt-sb keeps them: one memory image
 * per process (named `pid-<hex pid>`), started from the kernel image and filled by the
 * process's mmaps, plus the ABI of its first mapped ELF file (to pick a vdso).
 */
import { Image } from "../image/index.js";

export const Abi = { Unknown: 0, X64: 1, X32: 2, Ia32: 3 } as const;
export type Abi = (typeof Abi)[keyof typeof Abi];

export class SidebandContext {
  readonly image: Image;
  abi: Abi = Abi.Unknown;

  constructor(
    readonly pid: number,
    kernel: Image,
  ) {
    this.image = new Image(`pid-${pid.toString(16)}`);
    copySections(this.image, kernel);
  }
}

/** Map every section of `from` into `to` (replacing what they overlap there). */
export function copySections(to: Image, from: Image): void {
  for (const s of from.sections)
    to.addSection(s.name, s.bytes, s.offset, s.size, s.startHi, s.startLo, s.flags);
}

/** The ABI an ELF file's identification says (ELFCLASS64, or ELFCLASS32 with EM_386 / EM_X86_64). */
export function elfAbi(b: Uint8Array): Abi {
  if (b.length < 20 || b[0] !== 0x7f || b[1] !== 0x45 || b[2] !== 0x4c || b[3] !== 0x46) return Abi.Unknown;
  if (b[6] !== 1) return Abi.Unknown;
  if (b[4] === 2) return Abi.X64;
  if (b[4] !== 1) return Abi.Unknown;
  const machine = b[5] === 2 ? (b[18]! << 8) | b[19]! : b[18]! | (b[19]! << 8);
  if (machine === 3) return Abi.Ia32;
  if (machine === 62) return Abi.X32;
  return Abi.Unknown;
}
