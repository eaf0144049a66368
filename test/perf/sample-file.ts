/** A synthetic perf.data with one record of every kind ptkit reads, in file and pipe mode. */
import { auxtrace, type Built, Le, record } from "../../tools/perf/perf-data-writer.js";
import { DUMMY_SAMPLE_TYPE, PT_SAMPLE_TYPE, trailer } from "../../tools/perf/pt-file.js";

const body = (...parts: Array<Le | Uint8Array>) => {
  const le = new Le();
  for (const p of parts) le.raw(p instanceof Le ? p.done() : p);
  return le;
};

export const PAYLOAD_0A = Uint8Array.from({ length: 100 }, (_, i) => i);
export const PAYLOAD_1 = Uint8Array.from({ length: 40 }, (_, i) => 200 - i);
export const PAYLOAD_0B = Uint8Array.from({ length: 30 }, (_, i) => i * 3);

export function sampleFile(): Built {
  const t = (time: number, cpu = 2, id = 10) => trailer(100, 101, BigInt(time), cpu, id);
  const buildId = Uint8Array.from({ length: 20 }, (_, i) => i + 1);
  const records = [
    record(3, 1 << 13, body(new Le().u32(100).u32(100).str("ls"), t(1000))),
    record(
      10,
      1 << 14,
      body(
        new Le().u32(100).u32(101).u64(0x400000).u64(0x1000).u64(0).u8(20).u8(0).u16(0).raw(buildId),
        new Le().u32(5).u32(2).str("/bin/ls"),
        t(1001),
      ),
    ),
    record(7, 0, body(new Le().u32(102).u32(100).u32(102).u32(101).u64(1002), t(1002))),
    record(14, (1 << 13) | (1 << 14), t(1003)),
    record(15, 0, body(new Le().u32(0).u32(0), t(1004, 3, 20))),
    record(11, 0, body(new Le().u64(0x2000).u64(0x800).u64(5), t(1005))),
    record(12, 0, body(new Le().u32(100).u32(101), t(1006))),
    record(2, 0, body(new Le().u64(10).u64(3), t(1007))),
    record(13, 0, body(new Le().u64(7), t(1008))),
    record(
      17,
      0,
      body(new Le().u64(0xffffffffc0000000n).u32(0x100).u16(1).u16(0).str("bpf_prog_x"), t(1009)),
    ),
    record(
      20,
      0,
      body(new Le().u64(0xffffffff81000000n).u16(2).u16(2).raw([0x66, 0x90, 0xeb, 0x05]).u32(0), t(1010)),
    ),
    // An older perf's AUXTRACE_INFO: the first 10 Intel PT words only.
    record(
      70,
      0,
      (() => {
        const le = new Le().u32(1).u32(0);
        for (const w of [8n, 31n, 0x2819aa06n, 0xfffffffd108e9db0n, 1n, 0x400n, 0x800n, 3n, 0n, 1n])
          le.u64(w);
        return le;
      })(),
    ),
    record(
      79,
      0,
      new Le()
        .u64(31)
        .u64(0x2819aa06)
        .u64(0xfffffffd108e9db0n)
        .u64(5)
        .u64(0xffffffffffffffffn)
        .u8(1)
        .u8(0)
        .raw([0, 0, 0, 0, 0, 0]),
    ),
    auxtrace(PAYLOAD_0A, { idx: 0, tid: 101, cpu: 0 }),
    record(
      72,
      0,
      new Le()
        .u32(1)
        .u32(5)
        .u32(0)
        .u32(100)
        .u32(101)
        .u32(1)
        .u64(0x401000)
        .u64(1234)
        .str("overflow packet", 64),
    ),
    record(69, 0, new Le().u64(1).u64(10).u64(0).u64(0).u64(0xffffffff)),
    record(68, 0, new Le()),
    record(200, 0, new Le().u64(1)),
    auxtrace(PAYLOAD_1, { idx: 1, tid: 101, cpu: 1 }),
    auxtrace(PAYLOAD_0B, { idx: 0, tid: 101, cpu: 0, offset: 100 }),
  ];
  const features = new Map<number, Uint8Array>([
    [3, new Le().lenStr("testhost").done()],
    [7, new Le().u32(4).u32(2).done()],
    [9, new Le().lenStr("GenuineIntel,6,94,3").done()],
  ]);
  return {
    events: [
      { attr: { type: 8, config: 0x300e601n, sampleType: PT_SAMPLE_TYPE, sampleIdAll: true }, ids: [10, 11] },
      { attr: { type: 1, config: 9n, sampleType: DUMMY_SAMPLE_TYPE, sampleIdAll: true }, ids: [20] },
    ],
    records,
    features,
  };
}
