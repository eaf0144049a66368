/**
 * APX JMPABS (REX2 with map 0 and W=0, opcode A1, a 64-bit absolute target), which
 * iced-x86 1.21 predates. libipt knows it; Intel PT gives it a TIP although its
 * target is in the instruction bytes, so {@link decodeInsn} reports it as a
 * `JumpIndirect` that also carries its target.
 */

/** REX2 prefix byte; its payload byte follows. */
const REX2 = 0xd5;

/** Legacy prefixes that may precede a JMPABS (66 and 67 make it something else). */
function isIgnoredPrefix(b: number): boolean {
  return (
    b === 0xf0 ||
    b === 0xf2 ||
    b === 0xf3 ||
    b === 0x2e ||
    b === 0x36 ||
    b === 0x3e ||
    b === 0x26 ||
    b === 0x64 ||
    b === 0x65
  );
}

/** The length of a JMPABS at `bytes[at..end)` in 64-bit code, or 0 when there is none. */
export function jmpabsLength(bytes: Uint8Array, at: number, end: number): number {
  let i = at;
  while (i < end && isIgnoredPrefix(bytes[i]!)) i++;
  if (i + 11 > end || bytes[i] !== REX2) return 0;
  // Payload bit 7 selects map 1, bit 3 is REX.W.
  if ((bytes[i + 1]! & 0x88) !== 0 || bytes[i + 2] !== 0xa1) return 0;
  const length = i + 11 - at;
  return length <= 15 ? length : 0;
}

/** The little-endian 32-bit word at `bytes[p]`. */
function u32le(bytes: Uint8Array, p: number): number {
  return (bytes[p]! | (bytes[p + 1]! << 8) | (bytes[p + 2]! << 16) | (bytes[p + 3]! << 24)) >>> 0;
}

/** The target of a JMPABS of `length` bytes at `bytes[at]`: its last 8 bytes, as [hi, lo]. */
export function jmpabsTarget(bytes: Uint8Array, at: number, length: number): [hi: number, lo: number] {
  const end = at + length;
  return [u32le(bytes, end - 4), u32le(bytes, end - 8)];
}
