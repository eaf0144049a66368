/**
 * `ptkit flow --check` on records that disagree with the code: each kind of problem
 * ptxed reports (bad section id, unmapped or undecodable bytes, a block that does not
 * end where it says, a class that does not match the instruction) is found and
 * reported with the trace offset and IP.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Block, FlowClass, Insn } from "../../src/flow/index.js";
import { Image } from "../../src/image/index.js";
import { ExecMode } from "../../src/isa/index.js";
import { checkBlock, checkInsn } from "../../src/session/flow-check.js";
import { CodeWalker } from "../../src/session/flow-walk.js";

/** mov eax, 1; cmp rax, 1; je +2; nop; nop; jmp rax */
const CODE = Uint8Array.from([0xb8, 1, 0, 0, 0, 0x48, 0x83, 0xf8, 1, 0x74, 2, 0x90, 0x90, 0xff, 0xe0]);

function image(): Image {
  const img = new Image("test");
  img.addSection("code", CODE, 0, CODE.length, 0, 0x1000);
  return img;
}

/** The block mov; cmp; je at 0x1000, as a decoder would report it. */
function goodBlock(): Block {
  const b = new Block();
  b.ipLo = 0x1000;
  b.endIpLo = 0x1009;
  b.ninsn = 3;
  b.isid = 1;
  b.mode = ExecMode.Bits64;
  b.iclass = FlowClass.CondJump;
  return b;
}

function reports(check: (report: (line: string) => void) => void): string[] {
  const lines: string[] = [];
  check((l) => lines.push(l));
  return lines;
}

describe("flow --check", () => {
  const img = image();
  const walker = new CodeWalker();
  const block = (change: (b: Block) => void) => {
    const b = goodBlock();
    change(b);
    return reports((r) => checkBlock(walker, b, img, 0x42, r));
  };

  test("a consistent block passes", () => {
    assert.deepEqual(
      block(() => {}),
      [],
    );
    // Blocks run on through direct jumps: je taken to 0x100d, then jmp rax.
    assert.deepEqual(
      block((b) => {
        b.ninsn = 4;
        b.endIpLo = 0x100d;
        b.iclass = FlowClass.Jump;
      }),
      [],
    );
  });

  test("a block that does not end at its end IP", () => {
    assert.deepEqual(
      block((b) => {
        b.endIpLo = 0x1005;
        b.iclass = FlowClass.Unknown;
      }),
      ["[42, 1009: error: did not reach end: 1005]"],
    );
  });

  test("a class that does not match the last instruction", () => {
    assert.deepEqual(
      block((b) => {
        b.iclass = FlowClass.Call;
      }),
      ["[42, 1009: iclass error: iclass: near call, isa iclass: cond-branch]"],
    );
  });

  test("a bad section id, unmapped and undecodable code", () => {
    assert.deepEqual(
      block((b) => {
        b.isid = 0;
      }),
      ["[42, 1000: check error: bad isid]"],
    );
    assert.deepEqual(
      block((b) => {
        b.ipLo = 0x2000;
      }),
      ["[42, 2000: fetch error: no memory mapped at this address]"],
    );
    assert.deepEqual(
      block((b) => {
        b.mode = ExecMode.Unknown;
      }),
      ["[42, 1000: decode error: unknown instruction]"],
    );
  });

  test("instructions from the instruction flow decoder", () => {
    const insn = new Insn();
    insn.ipLo = 0x100d;
    insn.isid = 1;
    insn.mode = ExecMode.Bits64;
    insn.size = 2;
    insn.raw.set([0xff, 0xe0]);
    for (const ok of [FlowClass.Jump, FlowClass.Indirect]) {
      insn.iclass = ok;
      assert.deepEqual(
        reports((r) => checkInsn(walker, insn, 7, r)),
        [],
      );
    }
    insn.iclass = FlowClass.Return;
    insn.isid = 0;
    assert.deepEqual(
      reports((r) => checkInsn(walker, insn, 7, r)),
      [
        "[7, 100d: check error: bad isid]",
        "[7, 100d: iclass error: iclass: near return, isa iclass: jump-indirect]",
      ],
    );
  });
});
