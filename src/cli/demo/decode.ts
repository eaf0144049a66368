/**
 * The demo's decode: every instruction of a trace through ptkit's instruction
 * decoder into a {@link Profile} (and, for the timeline, into the analysis layer's
 * call stacks), the time span from the events' TSCs, and the decode errors with
 * their offsets (decoding goes on at the next PSB).
 */
import type { FlowTracker, Symbolizer } from "../../analysis/index.js";
import { Profile, type ProfileSummary } from "../../analysis/run-profile.js";
import { toBigInt } from "../../base/halves.js";
import type { DecoderConfig } from "../../event/index.js";
import { drive, FlowClass, Insn, InsnDecoder } from "../../flow/index.js";
import type { Image } from "../../image/index.js";
import { InsnClass } from "../../isa/index.js";
import { errorMessage } from "../../packet/index.js";

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
  let timed = false;
  let firstHi = 0;
  let firstLo = 0;
  let lastHi = 0;
  let lastLo = 0;
  let count = 0;
  drive(decoder, new Insn(), {
    event: (event) => {
      calls?.event(event);
      if (!event.hasTsc) return;
      if (!timed) {
        firstHi = event.tscHi;
        firstLo = event.tscLo;
        timed = true;
      }
      lastHi = event.tscHi;
      lastLo = event.tscLo;
    },
    record: (insn) => {
      profile.add(insn.ipHi, insn.ipLo, insn.iclass === FlowClass.Unknown ? InsnClass.Other : insn.insnClass);
      calls?.insnRecord(insn);
      if (++count % PROGRESS_EVERY === 0) onProgress(decoder.offset);
    },
    // Report the error where it happened and go on at the next PSB.
    error: (status, offset) => {
      errors.push({ offset, message: errorMessage(status) });
      calls?.error(offset, errorMessage(status));
    },
  });
  return {
    profile: profile.summary(),
    errors,
    firstTsc: timed ? toBigInt(firstHi, firstLo) : undefined,
    lastTsc: timed ? toBigInt(lastHi, lastLo) : undefined,
    seconds: (performance.now() - start) / 1000,
  };
}
