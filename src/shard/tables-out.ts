/**
 * Where a decode that feeds the shard tables leaves what it recorded: the call-stack
 * segments ({@link SegmentRecorder}) and the coverage with its edges. The decode's
 * analysis fills it in; the shard run (or `ptkit perf --db`) writes the tables from it.
 */
import type { Coverage } from "../analysis/index.js";
import type { SegmentRecorder } from "./segments.js";
import type { ShardData } from "./tables.js";

export class TablesOut {
  /** `calls`: record each call too (the `calls` table). */
  constructor(readonly calls = false) {}

  recorder: SegmentRecorder | undefined;
  coverage: Coverage | undefined;

  /** What was recorded, as shard `shard`'s data (empty when the decode never started). */
  data(shard: number): ShardData {
    const r = this.recorder;
    return {
      shard,
      clock: r?.clock.unit ?? "insn",
      segments: r?.segments ?? [],
      nodes: r?.nodeRows() ?? [],
      frames: r?.calls ? r.frameRows() : [],
      gaps: r?.gaps ?? [],
      edges: this.coverage?.edgeList() ?? [],
    };
  }
}
