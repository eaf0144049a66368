/**
 * Decision graphs kept between runs ({@link GraphStore}): a run over code an earlier
 * run decoded starts with that run's nodes instead of decoding the code again (on
 * the large bench program, about a fifth of the instruction count's time). The
 * walks ask {@link GraphCache.graph} for a graph wherever they made one; at the end,
 * {@link GraphCache.save} keeps those that grew.
 */
import { DecisionGraph, readGraph, writeGraph } from "../flow/index.js";
import { Image } from "../image/index.js";
import type { GraphStore } from "./io.js";

/** A graph handed out, with what it was made for. */
interface Held {
  graph: DecisionGraph;
  /** What its image maps ({@link codeOf}): another image that maps the same shares it. */
  code: string;
  maxNodes: number | undefined;
  maxWalk: number | undefined;
  /** Its key in the store (undefined: none, or no store). */
  key: string | undefined;
  /** Nodes it had when loaded or last kept: a graph that made none since is not written again. */
  kept: number;
}

/**
 * Graphs held at most (the walk's own are fewer: MAX_GRAPHS in
 * analysis/coverage-decode.ts); past it the oldest are kept now and let go, so that a
 * walk that makes graphs again and again holds no more.
 */
const MAX_HELD = 16;

export class GraphCache {
  private held: Held[] = [];

  constructor(private readonly store: GraphStore | undefined) {}

  /**
   * A graph of `image`'s code: one handed out before for an image that maps the same
   * (the streams of a perf.data recorded per CPU each have their process's image), the
   * one kept for it, or a new one. A graph decodes a copy of the image as it is now,
   * which nothing changes: an image that changes later asks for another. With more
   * than `maxNodes` nodes held together (processes take turns in a perf.data), or
   * {@link MAX_HELD} graphs, the oldest are kept now and let go, so memory stays
   * bounded as the walk's own does.
   */
  graph(image: Image, maxNodes?: number, maxWalk?: number): DecisionGraph {
    const code = codeOf(image);
    for (const h of this.held)
      if (h.code === code && h.maxNodes === maxNodes && h.maxWalk === maxWalk) return h.graph;
    const graph = new DecisionGraph(frozenCopy(image), maxNodes, maxWalk);
    const store = this.store;
    const key = store?.key(image);
    let kept = 0;
    if (key !== undefined) {
      const bytes = store!.load(key);
      const state = bytes === undefined ? undefined : readGraph(bytes);
      if (state !== undefined && typeof state !== "string" && state.size < graph.maxNodes) {
        graph.adopt(state);
        kept = state.size;
      }
    }
    let nodes = 0;
    for (const h of this.held) nodes += h.graph.size;
    while (this.held.length >= MAX_HELD || (this.held.length > 0 && nodes + graph.size > graph.maxNodes)) {
      const h = this.held.shift()!;
      nodes -= h.graph.size;
      this.keep(h, 0);
    }
    this.held.push({ graph, code, maxNodes, maxWalk, key, kept });
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
    // (Its image is a copy nothing changes: the nodes are true to the code its key names.)
    if (h.key === undefined || graph.size <= h.kept * (1 + growth)) return;
    // A full graph would only make the next run hand over sooner.
    if (graph.size >= graph.maxNodes || graph.walked >= graph.maxWalk) return;
    const bytes = writeGraph(graph.state());
    if (bytes !== undefined) this.store!.save(h.key, bytes);
    h.kept = graph.size;
  }
}

/** Ids of backing byte arrays, for {@link codeOf}. */
const bytesIds = new WeakMap<Uint8Array, number>();
let nextBytesId = 1;

/** What `image` maps, as a string: each section's place, size, offset and backing bytes (by identity), the fallback's too. */
function codeOf(image: Image): string {
  let code = "";
  for (let img: Image | null = image; img !== null; img = img.fallback) {
    code += "|";
    for (const s of img.sections) {
      let id = 0;
      if (s.bytes !== null) {
        id = bytesIds.get(s.bytes) ?? 0;
        if (id === 0) {
          id = nextBytesId++;
          bytesIds.set(s.bytes, id);
        }
      }
      code += `${s.startHi}:${s.startLo}:${s.size}:${s.offset}:${s.flags}:${id};`;
    }
  }
  return code;
}

/** A copy of `image` (and its fallback) that maps the same bytes: changes to `image` do not reach it. */
function frozenCopy(image: Image): Image {
  const copy = new Image(image.name, image.fallback === null ? null : frozenCopy(image.fallback));
  for (const s of image.sections)
    copy.addSection(s.name, s.bytes, s.offset, s.size, s.startHi, s.startLo, s.flags);
  return copy;
}
