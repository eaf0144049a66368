/**
 * The tables: what each shard writes (its call-stack segments and nodes, edges, gaps:
 * the merge's input) and what the merge makes of them (per-function totals, edges,
 * gaps, the shards), as Parquet columns. Schema "ptkit-shard-tables" version 1; the
 * result tables are documented in the README ("Past one machine").
 */
import { EdgeKind, edgeKindName, KeyTable } from "../analysis/index.js";
import { FunctionNames } from "./names.js";
import type { ParquetColumn, ParquetType } from "./parquet.js";
import type { FrameRow, GapRow, NodeRow, SegmentRow } from "./segments.js";
import { type CallRow, type FunctionRow, type ShardStacks, Stitcher } from "./stitch.js";

export const TABLES_SCHEMA = "ptkit-shard-tables";
export const TABLES_VERSION = 1;

/** An edge as a shard records it (from and to as halves). */
export interface EdgeRow {
  fromHi: number;
  fromLo: number;
  toHi: number;
  toLo: number;
  kind: number;
  count: number;
}

/** A column: its name, type and value in a row. */
interface Column<R> {
  name: string;
  type: ParquetType;
  get: (row: R) => unknown;
}

/** A table's columns and their values, ready for writeParquet. */
export interface TableData {
  columns: ParquetColumn[];
  values: unknown[][];
}

function table<R>(columns: readonly Column<R>[], rows: readonly R[]): TableData {
  return {
    columns: columns.map(({ name, type }) => ({ name, type })),
    values: columns.map((c) => rows.map(c.get)),
  };
}

const u64 = (hi: number, lo: number): bigint => (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);

const SEGMENTS: Column<SegmentRow>[] = [
  { name: "segment", type: "int64", get: (r) => r.segment },
  { name: "pid", type: "int64", get: (r) => r.pid },
  { name: "tid", type: "int64", get: (r) => r.tid },
  { name: "comm", type: "string", get: (r) => r.comm },
  { name: "start", type: "double", get: (r) => r.start },
  { name: "end_node", type: "int64", get: (r) => r.endNode },
  { name: "levels", type: "int64", get: (r) => r.levels },
  { name: "cleared", type: "bool", get: (r) => r.cleared },
  { name: "start_ip", type: "string", get: (r) => r.startIp },
  { name: "end_returns", type: "string", get: (r) => r.endReturns },
  { name: "first_ip", type: "string", get: (r) => r.firstIp },
  { name: "end_branch", type: "string", get: (r) => r.endBranch },
];

/** A node as written: its frame's name as an index into the shard's `names` table. */
interface NamedNode {
  row: NodeRow;
  name: number;
}

const NODES: Column<NamedNode>[] = [
  { name: "node", type: "int64", get: (r) => r.row.node },
  { name: "segment", type: "int64", get: (r) => r.row.segment },
  { name: "parent", type: "int64", get: (r) => r.row.parent },
  { name: "kind", type: "string", get: (r) => r.row.kind },
  { name: "level", type: "int64", get: (r) => r.row.level },
  { name: "name", type: "int64", get: (r) => r.name },
  { name: "calls", type: "int64", get: (r) => r.row.calls },
  { name: "self_insns", type: "int64", get: (r) => r.row.selfInsns },
  { name: "self_time", type: "double", get: (r) => r.row.selfTime },
];

/** The function and DSO of each name index (a shard has far fewer names than nodes). */
const NAMES: Column<[string, string]>[] = [
  { name: "function", type: "string", get: (r) => r[0] },
  { name: "dso", type: "string", get: (r) => r[1] },
];

const FRAMES: Column<FrameRow>[] = [
  { name: "node", type: "int64", get: (r) => r.node },
  { name: "start", type: "double", get: (r) => r.start },
  { name: "end", type: "double", get: (r) => r.end },
  { name: "how", type: "string", get: (r) => r.how },
];

const SHARD_EDGES: Column<EdgeRow>[] = [
  { name: "from", type: "uint64", get: (r) => u64(r.fromHi, r.fromLo) },
  { name: "to", type: "uint64", get: (r) => u64(r.toHi, r.toLo) },
  { name: "kind", type: "int32", get: (r) => r.kind },
  { name: "count", type: "int64", get: (r) => r.count },
];

const GAPS: Column<GapRow>[] = [
  { name: "segment", type: "int64", get: (r) => r.segment },
  { name: "pid", type: "int64", get: (r) => r.pid },
  { name: "tid", type: "int64", get: (r) => r.tid },
  { name: "what", type: "string", get: (r) => r.what },
  { name: "offset", type: "int64", get: (r) => r.offset },
  { name: "message", type: "string", get: (r) => r.message },
  { name: "time", type: "double", get: (r) => r.time },
];

/** What one shard recorded. */
export interface ShardData extends ShardStacks {
  /** The clock of its times: "ns" (then times are nanoseconds), "tsc" or "insn". */
  clock: string;
  edges: readonly EdgeRow[];
  gaps: readonly GapRow[];
}

/** The tables a shard writes (its files' names: shard-N.<name>.parquet). */
export function shardTables(d: ShardData): Record<string, TableData> {
  const names = new FunctionNames();
  const named = d.nodes.map((row) => ({ row, name: names.id(row.function, row.dso) }));
  return {
    segments: table(SEGMENTS, d.segments),
    nodes: table(NODES, named),
    names: table(NAMES, names.list),
    frames: table(FRAMES, d.frames ?? []),
    edges: table(SHARD_EDGES, d.edges),
    gaps: table(GAPS, d.gaps),
  };
}

export const SHARD_TABLES = ["segments", "nodes", "names", "frames", "edges", "gaps"] as const;

/** A shard's table read back: column name → value, per row. */
export type Row = Record<string, unknown>;

const num = (v: unknown): number => (typeof v === "bigint" ? Number(v) : (v as number));

/** A shard's data from its tables' rows (as a Parquet reader gives them back). */
export function shardData(shard: number, clock: string, rows: Record<string, readonly Row[]>): ShardData {
  const names = rows.names ?? [];
  return {
    shard,
    clock,
    segments: (rows.segments ?? []).map((r) => ({
      segment: num(r.segment),
      pid: num(r.pid),
      tid: num(r.tid),
      comm: r.comm as string,
      start: num(r.start),
      endNode: num(r.end_node),
      levels: num(r.levels),
      cleared: r.cleared === true,
      startIp: r.start_ip as string,
      endReturns: r.end_returns as string,
      firstIp: r.first_ip as string,
      endBranch: r.end_branch as string,
    })),
    nodes: (rows.nodes ?? []).map((r) => ({
      node: num(r.node),
      segment: num(r.segment),
      parent: num(r.parent),
      kind: r.kind as string,
      level: num(r.level),
      function: names[num(r.name)]?.function as string,
      dso: names[num(r.name)]?.dso as string,
      calls: num(r.calls),
      selfInsns: num(r.self_insns),
      selfTime: num(r.self_time),
    })),
    frames: (rows.frames ?? []).map((r) => ({
      node: num(r.node),
      start: num(r.start),
      end: num(r.end),
      how: r.how as string,
    })),
    edges: (rows.edges ?? []).map((r) => {
      const from = BigInt(r.from as bigint | number);
      const to = BigInt(r.to as bigint | number);
      return {
        fromHi: Number(from >> 32n),
        fromLo: Number(from & 0xffffffffn),
        toHi: Number(to >> 32n),
        toLo: Number(to & 0xffffffffn),
        kind: num(r.kind),
        count: num(r.count),
      };
    }),
    gaps: (rows.gaps ?? []).map((r) => ({
      segment: num(r.segment),
      pid: num(r.pid),
      tid: num(r.tid),
      what: r.what as string,
      offset: num(r.offset),
      message: r.message as string,
      time: num(r.time),
    })),
  };
}

/**
 * What is wrong with a shard's data read back from files (they may have been damaged
 * or written by something else), or undefined: nodes numbered 0.. in order with their
 * parents before them, segments numbered 0.. in order, every reference in range.
 */
export function shardProblem(d: ShardData): string | undefined {
  const segments = d.segments.length;
  for (const [i, seg] of d.segments.entries()) {
    if (seg.segment !== i) return `segment ${i} is numbered ${seg.segment}`;
    if (!Number.isSafeInteger(seg.endNode) || seg.endNode < -1 || seg.endNode >= d.nodes.length)
      return `segment ${i} ends at node ${seg.endNode}, which is not there`;
  }
  for (const [i, n] of d.nodes.entries()) {
    if (n.node !== i) return `node ${i} is numbered ${n.node}`;
    if (typeof n.function !== "string" || typeof n.dso !== "string") return `node ${i} has no name`;
    if (!Number.isSafeInteger(n.parent) || n.parent < -1 || n.parent >= i)
      return `node ${i} has parent ${n.parent}, not an earlier node`;
    if (!Number.isSafeInteger(n.segment) || n.segment < 0 || n.segment >= segments)
      return `node ${i} is in segment ${n.segment}, which is not there`;
  }
  for (const [i, f] of (d.frames ?? []).entries())
    if (!Number.isSafeInteger(f.node) || f.node < 0 || f.node >= d.nodes.length)
      return `frame ${i} is of node ${f.node}, which is not there`;
  return undefined;
}

/** The merged tables of a set of inputs. */
export type Results = Record<"functions" | "calls" | "edges" | "gaps", TableData>;

interface InputFunction extends FunctionRow {
  input: string;
  ns: boolean;
}

interface InputCall extends CallRow {
  input: string;
}

interface InputEdge {
  input: string;
  edge: EdgeRow;
}

interface InputGap extends GapRow {
  input: string;
  ns: boolean;
}

const FUNCTIONS: Column<InputFunction>[] = [
  { name: "input", type: "string", get: (r) => r.input },
  { name: "process", type: "int64", get: (r) => r.pid },
  { name: "thread", type: "int64", get: (r) => r.tid },
  { name: "comm", type: "string", get: (r) => r.comm },
  { name: "function", type: "string", get: (r) => r.function },
  { name: "dso", type: "string", get: (r) => r.dso },
  { name: "calls", type: "int64", get: (r) => r.calls },
  { name: "self_insns", type: "int64", get: (r) => r.selfInsns },
  { name: "total_insns", type: "int64", get: (r) => r.totalInsns },
  { name: "self_time_ns", type: "double", get: (r) => (r.ns ? r.selfTime : 0) },
  { name: "total_time_ns", type: "double", get: (r) => (r.ns ? r.totalTime : 0) },
];

const CALLS: Column<InputCall>[] = [
  { name: "input", type: "string", get: (r) => r.input },
  { name: "process", type: "int64", get: (r) => r.pid },
  { name: "thread", type: "int64", get: (r) => r.tid },
  { name: "comm", type: "string", get: (r) => r.comm },
  { name: "function", type: "string", get: (r) => r.function },
  { name: "dso", type: "string", get: (r) => r.dso },
  { name: "caller", type: "string", get: (r) => r.caller },
  { name: "depth", type: "int64", get: (r) => r.depth },
  { name: "start_ns", type: "double", get: (r) => r.start },
  { name: "duration_ns", type: "double", get: (r) => r.duration },
];

const EDGES: Column<InputEdge>[] = [
  { name: "input", type: "string", get: (r) => r.input },
  { name: "from", type: "uint64", get: (r) => u64(r.edge.fromHi, r.edge.fromLo) },
  { name: "to", type: "uint64", get: (r) => u64(r.edge.toHi, r.edge.toLo) },
  { name: "kind", type: "string", get: (r) => edgeKindName(r.edge.kind) },
  { name: "count", type: "int64", get: (r) => r.edge.count },
];

const RESULT_GAPS: Column<InputGap>[] = [
  { name: "input", type: "string", get: (r) => r.input },
  { name: "process", type: "int64", get: (r) => r.pid },
  { name: "thread", type: "int64", get: (r) => r.tid },
  { name: "what", type: "string", get: (r) => r.what },
  { name: "offset", type: "int64", get: (r) => r.offset },
  { name: "message", type: "string", get: (r) => r.message },
  { name: "time_ns", type: "double", get: (r) => (r.ns && Number.isFinite(r.time) ? r.time : 0) },
];

/**
 * Merges shards into the result tables: per input, the call stacks stitched across its
 * shards ({@link Stitcher}) and per-function totals, edge counts added up, gaps listed.
 * Times are nanoseconds where the shard's clock was ("ns"), else 0.
 */
export class ResultsBuilder {
  private readonly functions: InputFunction[] = [];
  private readonly calls: InputCall[] = [];
  private readonly edges: { input: string; edges: EdgeRow[] }[] = [];
  private readonly gaps: InputGap[] = [];

  /**
   * All shards of one input, at once (their call stacks are stitched together);
   * `continuous`: they are windows of one stream (a raw trace), see {@link Stitcher}.
   */
  addInput(input: string, shards: readonly ShardData[], continuous = false): void {
    const stitcher = new Stitcher(continuous);
    stitcher.add(shards);
    // Times add up only where every shard's clock is nanoseconds.
    const ns = shards.every((s) => s.clock === "ns" || s.segments.length === 0);
    for (const f of stitcher.functions()) this.functions.push({ ...f, input, ns });
    // Per call only in nanoseconds (a clock in ticks or instructions has no durations to compare).
    if (ns) for (const c of stitcher.calls) this.calls.push({ ...c, input });
    // The input's edges: (from, to) → index in the list.
    const ids = new KeyTable(Number.MAX_SAFE_INTEGER);
    const edges: EdgeRow[] = [];
    // Rows are the shards' own until a second shard adds to one: then it is copied.
    const own: boolean[] = [];
    // The transfers between windows: edges no window saw whole.
    const seams: EdgeRow[] = stitcher.seams.map((e) => {
      const from = BigInt(e.from);
      const to = BigInt(e.to);
      const half = (v: bigint, hi: boolean) => Number(hi ? v >> 32n : v & 0xffffffffn);
      const kind = e.kind === 256 ? EdgeKind.Async : e.kind;
      return {
        fromHi: half(from, true),
        fromLo: half(from, false),
        toHi: half(to, true),
        toLo: half(to, false),
        kind,
        count: 1,
      };
    });
    for (const s of [...shards, { edges: seams, gaps: [], clock: "" }]) {
      for (const e of s.edges) {
        const id = ids.id(e.fromHi, e.fromLo, e.toHi, e.toLo);
        let have = edges[id];
        if (have === undefined) {
          edges.push(e);
          continue;
        }
        if (!own[id]) {
          have = { ...have };
          edges[id] = have;
          own[id] = true;
        }
        have.count += e.count;
        if (have.kind === 0) have.kind = e.kind;
      }
      for (const g of s.gaps) this.gaps.push({ ...g, input, ns: s.clock === "ns" });
    }
    edges.sort((a, b) => a.fromHi - b.fromHi || a.fromLo - b.fromLo || a.toHi - b.toHi || a.toLo - b.toLo);
    this.edges.push({ input, edges });
  }

  results(): Results {
    return {
      functions: table(FUNCTIONS, this.functions),
      calls: table(CALLS, this.calls),
      edges: table(
        EDGES,
        this.edges.flatMap(({ input, edges }) => edges.map((edge) => ({ input, edge }))),
      ),
      gaps: table(RESULT_GAPS, this.gaps),
    };
  }
}
