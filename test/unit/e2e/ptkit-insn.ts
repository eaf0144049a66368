/**
 * ptkit's own instruction flow decoder run like the libipt harness's insn mode (and
 * ptxed): synchronise, take events while they are pending, decode instructions until
 * the end or an error, then synchronise onto the next PSB. Gives the instruction IPs
 * and the errors, in the harness's "I"/"E" vocabulary.
 */
import { drive, FlowClass, Insn, InsnDecoder } from "../../../src/flow/index.js";
import type { Image } from "../../../src/image/index.js";
import { errorMessage } from "../../../src/packet/index.js";

export interface PtkitDecode {
  /** IPs as 0x-prefixed lower-case hex. */
  ips: string[];
  /** "offset: message" of each error. */
  errors: string[];
}

export function decodeWithPtkit(trace: Uint8Array, image: Image): PtkitDecode {
  const dec = new InsnDecoder(trace, { image });
  const ips: string[] = [];
  const errors: string[] = [];
  drive(dec, new Insn(), {
    record: (insn) => {
      if (insn.iclass !== FlowClass.Unknown) ips.push(`0x${insn.ip.toString(16)}`);
    },
    error: (status, offset, sync) => {
      // The harness stops at a failed synchronisation.
      if (sync) {
        errors.push(`sync: ${errorMessage(status)}`);
        return false;
      }
      errors.push(`${offset.toString(16)}: ${errorMessage(status)}`);
      return true;
    },
  });
  return { ips, errors };
}
