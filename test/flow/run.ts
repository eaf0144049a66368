/**
 * Running the flow decoders the way ptxed does (sync, drain events, decode, resync
 * on error) and writing down what they report, one line per instruction, event or
 * error, so that tests compare readable transcripts. Blocks are expanded into their
 * instructions, so block and instruction decoders give comparable transcripts.
 */

import { ErrorCode, errorMessage } from "../../src/base/errors.js";
import type { DecoderConfig } from "../../src/event/config.js";
import { EventFlag, EventType, PtEvent, Status } from "../../src/event/types.js";
import { Block, BlockDecoder, Insn, InsnDecoder } from "../../src/flow/index.js";
import type { Image, ImageSet } from "../../src/image/index.js";
import { decodeInsn, ExecMode, InsnClass, InsnFlag, InsnInfo } from "../../src/isa/index.js";
import { describe } from "../event/helpers.js";

export interface RunOptions {
  config?: DecoderConfig;
  image?: Image;
  images?: ImageSet;
  /** Resynchronise after errors (ptxed --resync-on-error). */
  resync?: boolean;
  /** Give up after this many transcript lines. */
  limit?: number;
  /** The decoders' loop guard bound (FlowOptions.loopCheckAfter). */
  loopCheckAfter?: number;
}

export interface Transcript {
  /** Instructions as `0x...` (`? ` before speculative ones), events as `[...]`, errors as `[error: ...]`. */
  lines: string[];
  /** The instruction addresses alone. */
  ips: bigint[];
  /** Blocks seen (block decoder only). */
  blocks: number;
}

type Decoder = BlockDecoder | InsnDecoder;

/** Decode `trace` with the instruction decoder. */
export function runInsns(trace: Uint8Array, options: RunOptions): Transcript {
  const dec = new InsnDecoder(trace, options);
  const insn = new Insn();
  return drive(dec, options, (t) => {
    const status = dec.next(insn);
    if (status === -ErrorCode.EventIgnored) return Status.EventPending;
    if (status >= 0 || insn.iclass !== 0) addInsn(t, insn.ip, insn.speculative);
    return status;
  });
}

/** Decode `trace` with the block decoder, expanding each block into its instructions. */
export function runBlocks(trace: Uint8Array, options: RunOptions): Transcript {
  const dec = new BlockDecoder(trace, options);
  const block = new Block();
  return drive(dec, options, (t) => {
    const status = dec.next(block);
    t.blocks++;
    expandBlock(block, dec.image, t);
    return status;
  });
}

function addInsn(t: Transcript, ip: bigint, speculative: boolean): void {
  t.ips.push(ip);
  t.lines.push(`${speculative ? "? " : ""}0x${ip.toString(16)}`);
}

const info = new InsnInfo();
const bytes = new Uint8Array(15);

/** Walk a block's instructions as ptxed does: ip + length, or a direct jump's or call's target. */
export function expandBlock(block: Block, image: Image, t: Transcript): void {
  let ip = block.ip;
  for (let n = block.ninsn; n > 0; n--) {
    addInsn(t, ip, block.speculative);
    if (n === 1) break;
    const got = image.read(Number(ip >> 32n), Number(ip & 0xffffffffn), bytes, 15);
    const hi = Number(ip >> 32n);
    const lo = Number(ip & 0xffffffffn);
    const len = decodeInsn(bytes.subarray(0, Math.max(got, 0)), 0, hi, lo, block.mode as ExecMode, info);
    if (len < 0) {
      t.lines.push("[reconstruct error]");
      return;
    }
    const direct = info.iclass === InsnClass.Jump || info.iclass === InsnClass.Call;
    let next = ip + BigInt(len);
    if (direct && info.flags & InsnFlag.Target) {
      // As ptxed (xed_next_ip): the sign-extended displacement added to the 64-bit IP,
      // not the target wrapped to the operand size as the isa layer gives it.
      const rel = (info.targetLo - lo - len) | 0;
      next += BigInt(block.mode === ExecMode.Bits16 ? (rel << 16) >> 16 : rel);
    }
    ip = BigInt.asUintN(64, next);
  }
  if (block.ninsn > 0 && ip !== block.endIp) t.lines.push("[end ip mismatch]");
}

/** ptxed's decode loop over either decoder; `step` decodes one block or instruction. */
function drive(dec: Decoder, options: RunOptions, step: (t: Transcript) => number): Transcript {
  const t: Transcript = { lines: [], ips: [], blocks: 0 };
  const limit = options.limit ?? 100_000;
  const ev = new PtEvent();
  const event = (): number => {
    const status = dec.event(ev);
    if (status >= 0 && !ev.statusUpdate) {
      const resumed = ev.type === EventType.Enabled && ev.flags & EventFlag.Resumed ? " resumed" : "";
      t.lines.push(`[${describe(ev)}${resumed}]`);
    }
    return status;
  };
  let lastSync = -1;
  for (;;) {
    let status = dec.syncForward();
    if (status < 0) {
      if (status === -ErrorCode.Eos) return t;
      t.lines.push(`[sync error: ${errorMessage(status)}]`);
      if (dec.offset <= lastSync) return t;
      lastSync = dec.offset;
      continue;
    }
    for (;;) {
      while (status >= 0 && t.lines.length < limit) {
        while (status >= 0 && status & Status.EventPending) status = event();
        if (status < 0) break;
        if (status & Status.Eos) {
          if (!(status & Status.IpSuppressed)) t.lines.push("[end of trace]");
          return t;
        }
        status = step(t);
      }
      if (t.lines.length >= limit || status === -ErrorCode.Eos) return t;
      t.lines.push(`[error: ${errorMessage(status)}]`);
      if (!options.resync) return t;
      for (;;) {
        status = dec.resync();
        if (status !== -ErrorCode.EventIgnored) break;
        // An event without IP to take before resynchronising.
        const err = event();
        if (err < 0) {
          status = err;
          break;
        }
      }
      if (status < 0) {
        t.lines.push(`[resync error: ${errorMessage(status)}]`);
        break;
      }
      if (status & Status.IpSuppressed) t.lines.push("[disabled]");
    }
  }
}

/**
 * Decode with both decoders, check that they report the same instructions, events and
 * errors, and return the transcript.
 */
export function decodeBoth(trace: Uint8Array, options: RunOptions): string[] {
  const insns = runInsns(trace, options);
  const blocks = runBlocks(trace, options);
  if (JSON.stringify(insns.lines) !== JSON.stringify(blocks.lines)) {
    throw new Error(
      `decoders disagree:\ninsn:  ${insns.lines.join(" | ")}\nblock: ${blocks.lines.join(" | ")}`,
    );
  }
  return insns.lines;
}

/** `0x...` for an address, as transcripts write instructions. */
export function hx(ip: bigint): string {
  return `0x${ip.toString(16)}`;
}
