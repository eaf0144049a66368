/**
 * The instruction texts a CodeWalker keeps for listings (session/flow-walk.ts): an
 * instruction's text is kept the second time it is listed, found by IP and mode with
 * the options it was made with, and forgotten when the image is another or changed,
 * when the options change, and when another instruction takes its slot.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Image } from "../../src/image/index.js";
import { ExecMode } from "../../src/isa/index.js";
import { CodeWalker } from "../../src/session/flow-walk.js";

const NOPS = new Uint8Array(16).fill(0x90);

function image(): Image {
  const img = new Image("test");
  img.addRaw("code", NOPS, 0, 0x1000);
  return img;
}

const M64 = ExecMode.Bits64;

test("kept from the second listing on, by IP, mode and options", () => {
  const w = new CodeWalker();
  w.use(image());
  assert.equal(w.text(0, 0x1000, M64, 0), undefined);
  w.keepText(0, 0x1000, M64, 0, "first");
  // The first time only says it was seen.
  assert.equal(w.text(0, 0x1000, M64, 0), undefined);
  w.keepText(0, 0x1000, M64, 0, "nop");
  assert.equal(w.text(0, 0x1000, M64, 0), "nop");
  // Another mode, high half or low half is another instruction.
  assert.equal(w.text(0, 0x1000, ExecMode.Bits32, 0), undefined);
  assert.equal(w.text(1, 0x1000, M64, 0), undefined);
  assert.equal(w.text(0, 0x1001, M64, 0), undefined);
  // Texts made with other options (--att, --raw-insn) are not these.
  assert.equal(w.text(0, 0x1000, M64, 1), undefined);
  w.keepText(0, 0x1000, M64, 1, "att");
  assert.equal(w.text(0, 0x1000, M64, 0), undefined);
});

test("forgotten when the image is another or changed", () => {
  const w = new CodeWalker();
  const img = image();
  w.use(img);
  w.keepText(0, 0x1000, M64, 0, "nop");
  w.keepText(0, 0x1000, M64, 0, "nop");
  w.use(img);
  assert.equal(w.text(0, 0x1000, M64, 0), "nop");
  img.addRaw("more", NOPS, 0, 0x2000);
  w.use(img);
  assert.equal(w.text(0, 0x1000, M64, 0), undefined);
  w.keepText(0, 0x1000, M64, 0, "nop");
  w.keepText(0, 0x1000, M64, 0, "nop");
  w.use(image());
  assert.equal(w.text(0, 0x1000, M64, 0), undefined);
});

test("a slot holds one instruction: many addresses replace each other, each found only as kept", () => {
  const w = new CodeWalker();
  w.use(image());
  const n = 1 << 17;
  for (let i = 0; i < n; i++) {
    w.keepText(0, 0x10000 + i, M64, 0, `t${i}`);
    w.keepText(0, 0x10000 + i, M64, 0, `t${i}`);
  }
  let found = 0;
  for (let i = 0; i < n; i++) {
    const t = w.text(0, 0x10000 + i, M64, 0);
    if (t === undefined) continue;
    assert.equal(t, `t${i}`);
    found++;
  }
  // Fewer slots than addresses: some kept, most replaced.
  assert.ok(found > 0 && found < n, `${found}`);
});
