/**
 * `ptkit flow` with analysis outputs: wraps the decode unit (instructions or blocks) so
 * that everything ptxed's loop sees also reaches a {@link FlowTracker}: each decoded
 * instruction (blocks are walked through the code), each event, each error. What is
 * printed does not change: tick events that only the analysis asked for (for its
 * times) are passed on as status updates at the time already shown, which the loop
 * neither prints nor takes as its time.
 */

import type { FlowTracker } from "../analysis/index.js";
import { EventType, type PtEvent } from "../event/index.js";
import type { Image } from "../image/index.js";
import { errorMessage } from "../packet/index.js";
import { BlockInsns } from "./analysis-blocks.js";
import { BlockUnit } from "./flow-block-unit.js";
import type { InsnUnit } from "./flow-insn-unit.js";
import type { FlowDecoderCalls, FlowSession, FlowUnit } from "./flow-session.js";
import type { CodeWalker } from "./flow-walk.js";

export class AnalysisUnit implements FlowUnit {
  readonly decoder: FlowDecoderCalls;
  private readonly blocks: BlockInsns;

  constructor(
    private readonly inner: InsnUnit | BlockUnit,
    private readonly session: FlowSession,
    walker: CodeWalker,
    private readonly feed: FlowTracker,
    hideTicks: boolean,
  ) {
    this.blocks = new BlockInsns(walker);
    if (inner instanceof BlockUnit) inner.eachBlock = true;
    else inner.eachInsn = true;
    const d = inner.decoder;
    this.decoder = {
      syncForward: () => d.syncForward(),
      resync: () => d.resync(),
      event: (ev: PtEvent) => {
        const status = d.event(ev);
        if (status < 0) return status;
        feed.event(ev);
        if (hideTicks && ev.type === EventType.Tick) {
          // Not printed, and the time ptxed prints (--time) stays that of the last event shown.
          ev.statusUpdate = true;
          ev.tscHi = session.time.hi;
          ev.tscLo = session.time.lo;
        }
        return status;
      },
      get offset() {
        return d.offset;
      },
      get syncOffset() {
        return d.syncOffset;
      },
      get image() {
        return d.image;
      },
      set image(image: Image) {
        d.image = image;
      },
    };
  }

  reset(): void {
    this.inner.reset();
  }

  decodeOne(): number {
    const before = this.session.insnCount;
    const status = this.inner.decodeOne();
    if (this.session.insnCount !== before) {
      const inner = this.inner;
      if (inner instanceof BlockUnit)
        this.blocks.feed(inner.block, inner.decoder.image, this.feed, inner.decoder);
      else this.feed.insnRecord(inner.insn);
    }
    return status;
  }

  diagnose(what: string, code: number): void {
    this.inner.diagnose(what, code);
    const offset = this.inner.decoder.offset;
    this.feed.error(offset < 0 ? -1 : offset, `${what}: ${errorMessage(code)}`);
  }
}
