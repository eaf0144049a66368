/** C-style unsigned integers as libipt's tools read them (strtoul with base 0). */

const C_UINT = /^(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)$/;

/** Parse a whole C unsigned integer (decimal, 0x hex, 0 octal) as a BigInt; undefined if malformed. */
export function parseCUint(text: string): bigint | undefined {
  if (!C_UINT.test(text)) return undefined;
  if (/^0[xX]/.test(text)) return BigInt(text);
  if (text.length > 1 && text[0] === "0") return BigInt(`0o${text.slice(1)}`);
  return BigInt(text);
}

/** {@link parseCUint} as a Number; undefined if malformed or not below 2^53. */
export function parseCInt(text: string): number | undefined {
  const v = parseCUint(text);
  return v === undefined || v > BigInt(Number.MAX_SAFE_INTEGER) ? undefined : Number(v);
}
