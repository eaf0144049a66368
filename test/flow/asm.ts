/**
 * A tiny 64-bit x86 assembler for flow tests: the few hand-encoded instructions the
 * decoders care about, labels, and rel8/rel32 fixups. Code is built at a base
 * address and mapped into an {@link Image}.
 */
import { Image } from "../../src/image/index.js";

interface Fixup {
  /** Where the displacement goes, its size, the label, and the end of the instruction. */
  at: number;
  size: 1 | 4;
  label: string;
  end: number;
}

export class Asm {
  private readonly code: number[] = [];
  private readonly labels = new Map<string, number>();
  private readonly fixups: Fixup[] = [];
  /** Address of every instruction emitted, in order. */
  readonly starts: bigint[] = [];

  constructor(readonly base: bigint) {}

  /** The address of the next instruction. */
  get here(): bigint {
    return this.base + BigInt(this.code.length);
  }

  label(name: string): this {
    if (this.labels.has(name)) throw new Error(`duplicate label ${name}`);
    this.labels.set(name, this.code.length);
    return this;
  }

  /** A label's address (after {@link build}, or for labels already placed). */
  at(name: string): bigint {
    const off = this.labels.get(name);
    if (off === undefined) throw new Error(`no label ${name}`);
    return this.base + BigInt(off);
  }

  has(name: string): boolean {
    return this.labels.has(name);
  }

  /** Any instruction from its bytes. */
  raw(...bytes: number[]): this {
    this.starts.push(this.here);
    this.code.push(...bytes);
    return this;
  }

  private branch(opcode: number[], size: 1 | 4, label: string): this {
    this.starts.push(this.here);
    this.code.push(...opcode);
    const at = this.code.length;
    for (let i = 0; i < size; i++) this.code.push(0);
    this.fixups.push({ at, size, label, end: this.code.length });
    return this;
  }

  nop(): this {
    return this.raw(0x90);
  }
  /** add rax, 1 (4 bytes). */
  add(): this {
    return this.raw(0x48, 0x83, 0xc0, 0x01);
  }
  /** mov rax, [rsp + 0x10] with a 32-bit displacement (8 bytes). */
  load(): this {
    return this.raw(0x48, 0x8b, 0x84, 0x24, 0x10, 0x00, 0x00, 0x00);
  }
  hlt(): this {
    return this.raw(0xf4);
  }
  ret(): this {
    return this.raw(0xc3);
  }
  jmp(label: string): this {
    return this.branch([0xe9], 4, label);
  }
  jmp8(label: string): this {
    return this.branch([0xeb], 1, label);
  }
  /** jz rel32 (6 bytes). */
  jz(label: string): this {
    return this.branch([0x0f, 0x84], 4, label);
  }
  /** jz rel8 (2 bytes). */
  jz8(label: string): this {
    return this.branch([0x74], 1, label);
  }
  call(label: string): this {
    return this.branch([0xe8], 4, label);
  }
  /** call rax (indirect, 2 bytes). */
  callInd(): this {
    return this.raw(0xff, 0xd0);
  }
  /** jmp rax (indirect, 2 bytes). */
  jmpInd(): this {
    return this.raw(0xff, 0xe0);
  }
  /** call to the next instruction (displacement 0: not a call for RET compression). */
  callNext(): this {
    return this.raw(0xe8, 0, 0, 0, 0);
  }
  /** mov cr3, rax. */
  movCr3(): this {
    return this.raw(0x0f, 0x22, 0xd8);
  }
  /** ptwrite rax. */
  ptwrite(): this {
    return this.raw(0xf3, 0x48, 0x0f, 0xae, 0xe0);
  }
  syscall(): this {
    return this.raw(0x0f, 0x05);
  }
  /** sysretq. */
  sysret(): this {
    return this.raw(0x48, 0x0f, 0x07);
  }
  /** iretq. */
  iret(): this {
    return this.raw(0x48, 0xcf);
  }
  int3(): this {
    return this.raw(0xcc);
  }
  vmlaunch(): this {
    return this.raw(0x0f, 0x01, 0xc2);
  }
  /** ud2: "other" to the decoders (it raises #UD; trace shows an asynchronous branch). */
  ud2(): this {
    return this.raw(0x0f, 0x0b);
  }

  /** The code with every fixup resolved. */
  build(): Uint8Array {
    const out = Uint8Array.from(this.code);
    for (const f of this.fixups) {
      const target = this.labels.get(f.label);
      if (target === undefined) throw new Error(`no label ${f.label}`);
      const disp = target - f.end;
      if (f.size === 1) {
        if (disp < -128 || disp > 127) throw new Error(`rel8 out of range to ${f.label}`);
        out[f.at] = disp & 0xff;
      } else {
        new DataView(out.buffer).setInt32(f.at, disp, true);
      }
    }
    return out;
  }

  /** An image with the code mapped at the base. */
  image(): Image {
    const image = new Image("asm");
    addCode(image, this.build(), this.base);
    return image;
  }
}

/** Map `bytes` at `base` into `image`; returns the section id. */
export function addCode(image: Image, bytes: Uint8Array, base: bigint): number {
  const id = image.addSection(
    "code",
    bytes,
    0,
    bytes.length,
    Number(base >> 32n),
    Number(base & 0xffffffffn),
  );
  if (id < 0) throw new Error(`cannot map code at 0x${base.toString(16)}`);
  return id;
}
