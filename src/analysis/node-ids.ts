/**
 * Coverage table ids kept per decision-graph node, for the decodes that walk the graph
 * (GraphWalk's tables in coverage-decode.ts, a FlowTracker fed node by node): the id
 * of the block that is the node (entered at its start, left by its transfer), and of
 * two edges from its transfer (the node each goes to, and the edge's id: a conditional
 * jump's two, or an indirect branch's last two targets). A block or an edge run again
 * then costs one read here instead of a look-up in the tables (a hash and two cache
 * misses on a large program). The ids are of one Coverage's tables and one graph's
 * nodes: {@link clear} them when either changes.
 */

/** A node's words: the block's id, then (target node, edge id) twice, the newer first. */
const BLOCK = 0;
const TO_A = 1;
const EDGE_A = 2;
const TO_B = 3;
const EDGE_B = 4;
const WORDS = 5;

export class NodeIds {
  /** -1: nothing kept. */
  private ids = new Int32Array(0);
  /** The graph generation and coverage epoch the ids are of (see {@link use}). */
  generation = -1;
  epoch = -1;

  /**
   * From now on the ids are of a graph's generation `generation` and a coverage's epoch
   * `epoch` (DecisionGraph.generation, Coverage.epoch): those kept of others are forgotten.
   */
  use(generation: number, epoch: number): void {
    if (generation === this.generation && epoch === this.epoch) return;
    this.clear();
    this.generation = generation;
    this.epoch = epoch;
  }

  /** The block id kept for node `p` (-1: none; then {@link keepBlock}). */
  block(p: number): number {
    const m = p * WORDS;
    return m < this.ids.length ? this.ids[m + BLOCK]! : -1;
  }

  /** Keep `id` as node `p`'s block id. */
  keepBlock(p: number, id: number): void {
    this.room(p)[p * WORDS + BLOCK] = id;
  }

  /** The id kept for the edge from node `p`'s transfer to node `to` (-1: none; then {@link keepEdge}). */
  edge(p: number, to: number): number {
    const ids = this.ids;
    const m = p * WORDS;
    if (m >= ids.length) return -1;
    if (ids[m + TO_A] === to) return ids[m + EDGE_A]!;
    if (ids[m + TO_B] === to) return ids[m + EDGE_B]!;
    return -1;
  }

  /** Keep `id` (not -1) for the edge from node `p` to node `to`: the older of the two kept goes. */
  keepEdge(p: number, to: number, id: number): void {
    const ids = this.room(p);
    const m = p * WORDS;
    ids[m + TO_B] = ids[m + TO_A]!;
    ids[m + EDGE_B] = ids[m + EDGE_A]!;
    ids[m + TO_A] = to;
    ids[m + EDGE_A] = id;
  }

  /** Forget every id (another graph, or the tables were cleared). */
  clear(): void {
    this.ids = new Int32Array(0);
  }

  /** The words, with room for node `p`. */
  private room(p: number): Int32Array {
    let ids = this.ids;
    if ((p + 1) * WORDS > ids.length) {
      const grown = new Int32Array(Math.max(2 * ids.length, (p + 1) * WORDS, 1024)).fill(-1);
      grown.set(ids);
      ids = grown;
      this.ids = ids;
    }
    return ids;
  }
}
