/**
 * A stand-in for libxdc, for testing our libxdc harness without libxdc: the same API
 * (declared here), trivial decoding. The trace is a list of 8-byte little-endian
 * addresses; "decoding" fetches each one's page through the harness's callback, counts
 * the byte there in the bitmap and, tracing, reports the edge (address, that byte). An
 * address outside the filter ranges is libxdc's error, an unmapped page a page fault.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const STUB_H = `#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#define PT_TRACE_END 0x55
typedef void libxdc_t;
typedef enum { decoder_success, decoder_success_pt_overflow, decoder_page_fault, decoder_error,
  decoder_unkown_packet } decoder_result_t;
libxdc_t *libxdc_init(uint64_t filter[4][2], void *(*fetch)(void *, uint64_t, bool *), void *opaque,
  void *bitmap, size_t bitmap_size);
decoder_result_t libxdc_decode(libxdc_t *self, uint8_t *data, size_t len);
uint64_t libxdc_bitmap_get_hash(libxdc_t *self);
void libxdc_bitmap_reset(libxdc_t *self);
void libxdc_register_edge_callback(libxdc_t *self, void (*cb)(void *, uint64_t, uint64_t), void *opaque);
void libxdc_enable_tracing(libxdc_t *self);
`;
const STUB_C = `#include <stdlib.h>
#include <string.h>
#include "libxdc.h"
struct stub { uint64_t f[4][2]; void *(*fetch)(void *, uint64_t, bool *); void *opaque; uint8_t *map;
  size_t size; void (*cb)(void *, uint64_t, uint64_t); void *cbo; bool tracing; };
libxdc_t *libxdc_init(uint64_t filter[4][2], void *(*fetch)(void *, uint64_t, bool *), void *opaque,
    void *bitmap, size_t bitmap_size) {
  struct stub *s = calloc(1, sizeof(*s));
  memcpy(s->f, filter, sizeof(s->f));
  s->fetch = fetch; s->opaque = opaque; s->map = bitmap; s->size = bitmap_size;
  return s;
}
decoder_result_t libxdc_decode(libxdc_t *self, uint8_t *data, size_t len) {
  struct stub *s = self;
  if (data[len] != PT_TRACE_END) return decoder_unkown_packet;
  for (size_t i = 0; i + 8 <= len; i += 8) {
    uint64_t a = 0; bool ok = false, in = false;
    for (int k = 7; k >= 0; k--) a = a << 8 | data[i + k];
    for (int r = 0; r < 4; r++) in = in || (a > s->f[r][0] && a < s->f[r][1]);
    if (!in) return decoder_error;
    uint8_t *page = s->fetch(s->opaque, a & ~0xfffULL, &ok);
    if (!ok) return decoder_page_fault;
    uint8_t b = page[a & 0xfff];
    s->map[b % s->size]++;
    if (s->tracing) s->cb(s->cbo, a, b);
  }
  return decoder_success;
}
uint64_t libxdc_bitmap_get_hash(libxdc_t *self) {
  struct stub *s = self; uint64_t h = 0;
  for (size_t i = 0; i < s->size; i++) h = h * 31 + s->map[i];
  return h;
}
void libxdc_bitmap_reset(libxdc_t *self) { struct stub *s = self; memset(s->map, 0, s->size); }
void libxdc_register_edge_callback(libxdc_t *self, void (*cb)(void *, uint64_t, uint64_t), void *opaque) {
  struct stub *s = self; s->cb = cb; s->cbo = opaque;
}
void libxdc_enable_tracing(libxdc_t *self) { ((struct stub *) self)->tracing = true; }
`;

/** A stand-in libxdc build (libxdc.h, libxdc.a) in a new directory under `dir`, or why there is none. */
export function stubLibxdc(dir: string): string | { skip: string } {
  const lib = mkdtempSync(join(dir, "stub-"));
  writeFileSync(join(lib, "libxdc.h"), STUB_H);
  writeFileSync(join(lib, "stub.c"), STUB_C);
  const cc = process.env.CC || "cc";
  const c = spawnSync(cc, ["-O2", "-c", "-o", join(lib, "stub.o"), join(lib, "stub.c")], {
    encoding: "utf8",
  });
  if (c.error) return { skip: `no C compiler (${cc})` };
  assert.equal(c.status, 0, c.stderr);
  const ar = spawnSync("ar", ["rcs", join(lib, "libxdc.a"), join(lib, "stub.o")], { encoding: "utf8" });
  if (ar.error) return { skip: "no ar" };
  assert.equal(ar.status, 0, ar.stderr);
  return lib;
}
