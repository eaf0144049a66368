/**
 * Decision graphs kept between runs ({@link GraphStore}): a run over code an earlier
 * run decoded starts with that run's nodes instead of decoding the code again (on
 * the large bench program, about a fifth of the instruction count's time). The
 * walks ask {@link GraphCache.graph} for a graph wherever they made one; at the end,
 * {@link GraphCache.save} keeps those that grew.
 */
import { DecisionGraph, readGraph, writeGraph } from "../flow/index.js";
import type { Image } from "../image/index.js";
import type { GraphStore } from "./io.js";

/** A graph handed out, with what it was made for. */
interface Held {
  graph: DecisionGraph;
  image: Image;
  key: string;
  /** The image's version when the key was taken: a graph whose image changed since is not kept. */
  version: number;
  /** Nodes it had when loaded or last kept: a graph that made none since is not written again. */
  kept: number;
}

/**
 * Graphs held to be kept at the end at most (the walk's own are fewer: MAX_GRAPHS in
 * analysis/coverage-decode.ts); past it the oldest are kept now and let go, so that a
 * walk that makes graphs again and again holds no more.
 */
const MAX_HELD = 16;

export class GraphCache {
  private held: Held[] = [];

  constructor(private readonly store: GraphStore | undefined) {}

  /**
   * A graph of `image`'s code: the one kept for it, or a new one. With more than
   * `maxNodes` nodes held together (processes take turns in a perf.data), or
   * {@link MAX_HELD} graphs, the oldest are kept now and let go, so memory stays
   * bounded as the walk's own does.
   */
  graph(image: Image, maxNodes?: number, maxWalk?: number): DecisionGraph {
    const graph = new DecisionGraph(image, maxNodes, maxWalk);
    const store = this.store;
    if (store === undefined) return graph;
    const key = store.key(image);
    if (key === undefined) return graph;
    const bytes = store.load(key);
    const state = bytes === undefined ? undefined : readGraph(bytes);
    let kept = 0;
    if (state !== undefined && typeof state !== "string" && state.size < graph.maxNodes) {
      graph.adopt(state);
      kept = state.size;
    }
    let nodes = 0;
    for (const h of this.held) nodes += h.graph.size;
    while (this.held.length >= MAX_HELD || (this.held.length > 0 && nodes + graph.size > graph.maxNodes)) {
      const h = this.held.shift()!;
      nodes -= h.graph.size;
      this.keep(h, 0);
    }
    this.held.push({ graph, image, key, version: image.version, kept });
    return graph;
  }

  /**
   * Keep every graph handed out that made nodes since it was loaded or last kept, or
   * with `growth`, more than that fraction of the nodes it had then (a decoding thread
   * keeps its graph after each piece, most of it after the first). A cache: a failure
   * to write is no error.
   */
  save(growth = 0): void {
    for (const h of this.held) this.keep(h, growth);
  }

  private keep(h: Held, growth: number): void {
    const { graph } = h;
    if (graph.size <= h.kept * (1 + growth) || graph.image !== h.image || h.image.version !== h.version)
      return;
    // A full graph would only make the next run hand over sooner.
    if (graph.size >= graph.maxNodes || graph.walked >= graph.maxWalk) return;
    const bytes = writeGraph(graph.state());
    if (bytes !== undefined) this.store!.save(h.key, bytes);
    h.kept = graph.size;
  }
}
