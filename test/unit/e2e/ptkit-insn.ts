/**
 * ptkit's own instruction flow decoder run like the libipt harness's insn mode (and
 * ptxed): synchronise, take events while they are pending, decode instructions until
 * the end or an error, then synchronise onto the next PSB. Gives the instruction IPs
 * and the errors, in the harness's "I"/"E" vocabulary.
 */
import { PtEvent, Status } from "../../../src/event/index.js";
import { FlowClass, Insn, InsnDecoder } from "../../../src/flow/index.js";
import type { Image } from "../../../src/image/index.js";
import { ErrorCode, errorMessage } from "../../../src/packet/index.js";

export interface PtkitDecode {
  /** IPs as 0x-prefixed lower-case hex. */
  ips: string[];
  /** "offset: message" of each error. */
  errors: string[];
}

export function decodeWithPtkit(trace: Uint8Array, image: Image): PtkitDecode {
  const dec = new InsnDecoder(trace, { image });
  const insn = new Insn();
  const ev = new PtEvent();
  const ips: string[] = [];
  const errors: string[] = [];
  for (;;) {
    let status = dec.syncForward();
    if (status < 0) {
      if (status !== -ErrorCode.Eos) errors.push(`sync: ${errorMessage(status)}`);
      break;
    }
    for (;;) {
      while (status >= 0 && status & Status.EventPending) status = dec.event(ev);
      if (status < 0 || status & Status.Eos) break;
      insn.clear();
      status = dec.next(insn);
      if (status === -ErrorCode.EventIgnored) {
        status = Status.EventPending;
        continue;
      }
      if (insn.iclass !== FlowClass.Unknown) ips.push(`0x${insn.ip.toString(16)}`);
    }
    if (status >= 0 || status === -ErrorCode.Eos) break;
    errors.push(`${dec.offset.toString(16)}: ${errorMessage(status)}`);
  }
  return { ips, errors };
}
