/**
 * Coverage table ids kept per decision-graph node, for the decodes that walk the graph
 * (GraphWalk's tables in coverage-decode.ts, a FlowTracker fed node by node): the id
 * of the block that is the node (entered at its start, left by its transfer), and of
 * two edges from its transfer (the node each goes to, and the edge's id: a conditional
 * jump's two, or an indirect branch's last two targets), each with the runs counted
 * here since they were last added to the coverage's counts ({@link settle}). A block or
 * an edge run again then costs a read and a write of one node's 32 bytes instead of a
 * look-up in the tables (a hash and two cache misses on a large program) and a write
 * to the counts (one more). The ids are of one Coverage's tables and one graph's
 * nodes (see {@link use}); the coverage's counts hold the runs counted here only after
 * {@link settle}.
 */
import type { Coverage } from "./export/coverage.js";

/** A node's words: the block's id and runs, then (target node, edge id, runs) twice, the newer first. */
const BLOCK = 0;
const BLOCK_RUNS = 1;
const TO_A = 2;
const EDGE_A = 3;
const RUNS_A = 4;
const TO_B = 5;
const EDGE_B = 6;
const RUNS_B = 7;
const WORDS = 8;
/** Runs held in a word at most before they go to the coverage (int32 words). */
const MAX_RUNS = 1 << 30;

export class NodeIds {
  /** -1: no id kept. */
  private ids = new Int32Array(0);
  /** The graph generation and coverage epoch the ids are of (see {@link use}). */
  generation = -1;
  epoch = -1;

  /** The memory held, in 32-bit words. */
  get words(): number {
    return this.ids.length;
  }

  /**
   * From now on the ids are of a graph's generation `generation` (DecisionGraph's) and
   * of `cov`'s epoch: when either changed, the runs held go to the coverage (if its
   * tables are still those they count in) and the ids are forgotten.
   */
  use(generation: number, cov: Coverage): void {
    if (generation === this.generation && cov.epoch === this.epoch) return;
    this.settle(cov);
    this.ids = new Int32Array(0);
    this.generation = generation;
    this.epoch = cov.epoch;
  }

  /**
   * Node `p`'s block ran once more: when its id is kept, counted here (the coverage's
   * count after {@link settle}), and the id; else -1 (look it up, {@link keepBlock}).
   */
  runBlock(cov: Coverage, p: number): number {
    const ids = this.ids;
    const m = p * WORDS;
    if (m >= ids.length) return -1;
    const id = ids[m + BLOCK]!;
    if (id >= 0 && ++ids[m + BLOCK_RUNS]! === MAX_RUNS) this.settleNode(cov, m);
    return id;
  }

  /** Keep `id` (-1: the table is full, nothing kept) as node `p`'s block id; the run that looked it up is the caller's to count. */
  keepBlock(p: number, id: number): void {
    if (id >= 0) this.room(p)[p * WORDS + BLOCK] = id;
  }

  /** The edge from node `p`'s transfer to node `to` ran: counted here when its id is kept (true); else false ({@link keepEdge}). */
  runEdge(cov: Coverage, p: number, to: number): boolean {
    const ids = this.ids;
    const m = p * WORDS;
    if (m >= ids.length) return false;
    let runs = -1;
    if (ids[m + TO_A] === to) runs = m + RUNS_A;
    else if (ids[m + TO_B] === to) runs = m + RUNS_B;
    else return false;
    if (++ids[runs]! === MAX_RUNS) this.settleNode(cov, m);
    return true;
  }

  /**
   * Keep `id` (not -1) for the edge from node `p` to node `to` (the run that looked it
   * up is the caller's to count): the older of the two kept goes, its runs to `cov`.
   */
  keepEdge(cov: Coverage, p: number, to: number, id: number): void {
    const ids = this.room(p);
    const m = p * WORDS;
    const runs = ids[m + RUNS_B]!;
    if (runs > 0) cov.countEdge(ids[m + EDGE_B]!, runs);
    ids[m + TO_B] = ids[m + TO_A]!;
    ids[m + EDGE_B] = ids[m + EDGE_A]!;
    ids[m + RUNS_B] = ids[m + RUNS_A]!;
    ids[m + TO_A] = to;
    ids[m + EDGE_A] = id;
    ids[m + RUNS_A] = 0;
  }

  /**
   * The runs held go to `cov`'s counts (before anything reads them), when its tables
   * are those the ids are of (else they counted in tables cleared since: dropped).
   */
  settle(cov: Coverage): void {
    const ids = this.ids;
    if (cov.epoch !== this.epoch) {
      this.ids = new Int32Array(0);
      return;
    }
    for (let m = 0; m < ids.length; m += WORDS) this.settleNode(cov, m);
  }

  /** The runs held in the node's words at `m` go to `cov`. */
  private settleNode(cov: Coverage, m: number): void {
    const ids = this.ids;
    if (ids[m + BLOCK_RUNS]! > 0) cov.countBlockRuns(ids[m + BLOCK]!, ids[m + BLOCK_RUNS]!);
    if (ids[m + RUNS_A]! > 0) cov.countEdge(ids[m + EDGE_A]!, ids[m + RUNS_A]!);
    if (ids[m + RUNS_B]! > 0) cov.countEdge(ids[m + EDGE_B]!, ids[m + RUNS_B]!);
    ids[m + BLOCK_RUNS] = 0;
    ids[m + RUNS_A] = 0;
    ids[m + RUNS_B] = 0;
  }

  /** The words, with room for node `p` (ids -1, runs 0). */
  private room(p: number): Int32Array {
    let ids = this.ids;
    if ((p + 1) * WORDS > ids.length) {
      const grown = new Int32Array(Math.max(2 * ids.length, (p + 1) * WORDS, 1024 * WORDS));
      for (let m = ids.length; m < grown.length; m += WORDS) {
        grown[m + BLOCK] = -1;
        grown[m + TO_A] = -1;
        grown[m + TO_B] = -1;
      }
      grown.set(ids);
      ids = grown;
      this.ids = ids;
    }
    return ids;
  }
}
