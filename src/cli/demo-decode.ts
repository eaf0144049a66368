/**
 * The demo's decode: every instruction of a trace through ptkit's instruction
 * decoder into a {@link Profile} (and, for the timeline, into the analysis layer's
 * call stacks), the time span from the events' TSCs, and the decode errors with
 * their offsets (decoding goes on at the next PSB).
 */
import type { FlowTracker, Symbolizer } from "../analysis/index.js";
import { type DecoderConfig, PtEvent, Status } from "../event/index.js";
import { FlowClass, Insn, InsnDecoder } from "../flow/index.js";
import type { Image } from "../image/index.js";
import { InsnClass } from "../isa/index.js";
import { ErrorCode, errorMessage } from "../packet/index.js";
import { toBigInt } from "../packet/u64.js";
import { Profile, type ProfileSummary } from "./demo-profile.js";

export interface TraceDecode {
  profile: ProfileSummary;
  errors: { offset: number; message: string }[];
  /** TSC of the first and the last event with a time; undefined without timing packets. */
  firstTsc: bigint | undefined;
  lastTsc: bigint | undefined;
  /** Wall-clock time of the decode. */
  seconds: number;
}

/** Report progress every this many instructions. */
const PROGRESS_EVERY = 1 << 14;

export function decodeTrace(
  trace: Uint8Array,
  image: Image,
  config: DecoderConfig,
  symbols: Symbolizer,
  onProgress: (offset: number) => void = () => {},
  calls?: FlowTracker,
): TraceDecode {
  const start = performance.now();
  const profile = new Profile(symbols);
  const errors: TraceDecode["errors"] = [];
  const decoder = new InsnDecoder(trace, { image, config });
  const insn = new Insn();
  const event = new PtEvent();
  let timed = false;
  let firstHi = 0;
  let firstLo = 0;
  let lastHi = 0;
  let lastLo = 0;
  let count = 0;
  let synced = -1;
  for (;;) {
    let status = decoder.syncForward();
    if (status < 0) {
      if (status !== -ErrorCode.Eos) errors.push({ offset: decoder.offset, message: errorMessage(status) });
      break;
    }
    // A sync that does not move on would find the same error again.
    if (decoder.syncOffset <= synced) break;
    synced = decoder.syncOffset;
    for (;;) {
      while (status >= 0 && status & Status.EventPending) {
        status = decoder.event(event);
        if (status >= 0) calls?.event(event);
        if (status >= 0 && event.hasTsc) {
          if (!timed) {
            firstHi = event.tscHi;
            firstLo = event.tscLo;
            timed = true;
          }
          lastHi = event.tscHi;
          lastLo = event.tscLo;
        }
      }
      if (status < 0 || status & Status.Eos) break;
      status = decoder.next(insn);
      if (status < 0) break;
      profile.add(insn.ipHi, insn.ipLo, insn.iclass === FlowClass.Unknown ? InsnClass.Other : insn.insnClass);
      calls?.insnRecord(insn);
      if (++count % PROGRESS_EVERY === 0) onProgress(decoder.offset);
    }
    if (status >= 0 || status === -ErrorCode.Eos) break;
    // Report the error where it happened and go on at the next PSB.
    errors.push({ offset: decoder.offset, message: errorMessage(status) });
    calls?.error(decoder.offset, errorMessage(status));
  }
  return {
    profile: profile.summary(),
    errors,
    firstTsc: timed ? toBigInt(firstHi, firstLo) : undefined,
    lastTsc: timed ? toBigInt(lastHi, lastLo) : undefined,
    seconds: (performance.now() - start) / 1000,
  };
}
