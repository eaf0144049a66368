/**
 * A perf.data writer for tests and benchmarks: events, records and feature sections
 * laid out as perf does (tools/perf/util/header.c), in file or pipe mode.
 */
import { concatBytes } from "../../src/perf/bytes.js";

/** Little-endian bytes. */
export class Le {
  private bytes: number[] = [];

  u8(v: number): this {
    this.bytes.push(v & 0xff);
    return this;
  }
  u16(v: number): this {
    return this.u8(v).u8(v >> 8);
  }
  u32(v: number): this {
    return this.u16(v & 0xffff).u16((v >>> 16) & 0xffff);
  }
  u64(v: number | bigint): this {
    const b = BigInt.asUintN(64, BigInt(v));
    return this.u32(Number(b & 0xffffffffn)).u32(Number(b >> 32n));
  }
  raw(b: ArrayLike<number>): this {
    for (let i = 0; i < b.length; i++) this.bytes.push(b[i]!);
    return this;
  }
  /** A NUL-terminated string, padded with NULs to a multiple of `align` bytes. */
  str(s: string, align = 8): this {
    const b = new TextEncoder().encode(s);
    this.raw(b).u8(0);
    for (let n = b.length + 1; n % align; n++) this.u8(0);
    return this;
  }
  /** perf's feature string: u32 length, then the string padded to 64. */
  lenStr(s: string): this {
    const n = Math.ceil((new TextEncoder().encode(s).length + 1) / 64) * 64;
    const body = new Le().str(s, 64).done();
    return this.u32(n).raw(body);
  }
  get length(): number {
    return this.bytes.length;
  }
  done(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }
}

/** One record: header (size computed) and body. */
export function record(type: number, misc: number, body: Uint8Array | Le): Uint8Array {
  const b = body instanceof Le ? body.done() : body;
  return new Le()
    .u32(type)
    .u16(misc)
    .u16(8 + b.length)
    .raw(b)
    .done();
}

/** An AUXTRACE record and its payload. */
export function auxtrace(
  payload: Uint8Array,
  o: { offset?: number; idx: number; tid: number; cpu: number; reference?: bigint },
): Uint8Array {
  const head = record(
    71,
    0,
    new Le()
      .u64(payload.length)
      .u64(o.offset ?? 0)
      // perf record's reference is the TSC when it took the buffer; its decoder takes a
      // buffer's first TSC packet's upper 8 bits from it.
      .u64(o.reference ?? 0x1234n)
      .u32(o.idx)
      .u32(o.tid)
      .u32(o.cpu)
      .u32(0),
  );
  return concat([head, payload]);
}

export const concat = concatBytes;

export interface AttrSpec {
  type: number;
  config?: bigint;
  sampleType: number;
  sampleIdAll?: boolean;
  /** The attr size to write (default 112, PERF_ATTR_SIZE_VER5). */
  size?: number;
}

export function attrBytes(a: AttrSpec): Uint8Array {
  const size = a.size ?? 112;
  const le = new Le()
    .u32(a.type)
    .u32(size)
    .u64(a.config ?? 0n)
    .u64(1)
    .u64(a.sampleType)
    .u64(0)
    .u64(a.sampleIdAll ? 1n << 18n : 0n);
  while (le.length < size) le.u8(0);
  return le.done();
}

export interface Built {
  events: Array<{ attr: AttrSpec; ids: number[] }>;
  records: Uint8Array[];
  /** Feature id → section body. */
  features?: Map<number, Uint8Array>;
}

/** The file-mode perf.data: header, ids, attrs, data, feature table and sections. */
export function fileMode(p: Built): Uint8Array {
  const attrs = p.events.map((e) => attrBytes(e.attr));
  const attrSize = (attrs[0]?.length ?? 112) + 16;
  let at = 104;
  const idsAt: number[] = [];
  const idParts: Uint8Array[] = [];
  for (const e of p.events) {
    idsAt.push(at);
    const ids = new Le();
    for (const id of e.ids) ids.u64(id);
    idParts.push(ids.done());
    at += e.ids.length * 8;
  }
  const attrsAt = at;
  const attrPart = new Le();
  p.events.forEach((e, i) => {
    attrPart
      .raw(attrs[i]!)
      .u64(idsAt[i]!)
      .u64(e.ids.length * 8);
  });
  at += attrPart.length;
  const dataAt = at;
  const data = concat(p.records);
  at += data.length;
  const features = [...(p.features ?? new Map<number, Uint8Array>())].sort((a, b) => a[0] - b[0]);
  const table = new Le();
  let sectionAt = at + features.length * 16;
  for (const [, body] of features) {
    table.u64(sectionAt).u64(body.length);
    sectionAt += body.length;
  }
  const bitmap = [0, 0, 0, 0, 0, 0, 0, 0];
  for (const [id] of features) bitmap[id >> 5]! |= 1 << (id & 31);
  const header = new Le().raw(new TextEncoder().encode("PERFILE2")).u64(104).u64(attrSize);
  header.u64(attrsAt).u64(attrPart.length).u64(dataAt).u64(data.length).u64(0).u64(0);
  for (const w of bitmap) header.u32(w);
  return concat([
    header.done(),
    ...idParts,
    attrPart.done(),
    data,
    table.done(),
    ...features.map((f) => f[1]),
  ]);
}

/** The pipe-mode stream: pipe header, HEADER_ATTR and HEADER_FEATURE records, then the records. */
export function pipeMode(p: Built): Uint8Array {
  const header = new Le().raw(new TextEncoder().encode("PERFILE2")).u64(16).done();
  const attrs = p.events.map((e) => {
    const body = new Le().raw(attrBytes(e.attr));
    for (const id of e.ids) body.u64(id);
    return record(64, 0, body);
  });
  const features = [...(p.features ?? new Map<number, Uint8Array>())].map(([id, body]) =>
    record(80, 0, new Le().u64(id).raw(body)),
  );
  return concat([header, ...attrs, ...features, ...p.records]);
}
