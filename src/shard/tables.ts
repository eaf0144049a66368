/**
 * The tables: what each shard writes (its call-stack segments and nodes, edges, gaps:
 * the merge's input) and what the merge makes of them (per-function totals, edges,
 * gaps, the shards), as Parquet columns. Schema "ptkit-shard-tables" version 1; the
 * result tables are documented in the README ("Past one machine").
 */

import { EdgeKind, edgeKindName, KeyTable } from "../analysis/index.js";
import { toBigInt } from "../base/halves.js";
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

const u64 = toBigInt;

/** An edge from 64-bit addresses (exact Numbers below 2^53, else bigints). */
function edgeRow(from: bigint | number, to: bigint | number, kind: number, count: number): EdgeRow {
  const hi = (v: bigint | number) =>
    typeof v === "number" ? Math.floor(v / 0x1_0000_0000) : Number(BigInt.asUintN(64, v) >> 32n);
  const lo = (v: bigint | number) =>
    typeof v === "number" ? v >>> 0 : Number(BigInt.asUintN(64, v) & 0xffffffffn);
  return { fromHi: hi(from), fromLo: lo(from), toHi: hi(to), toLo: lo(to), kind, count };
}

/** A column that is a field of the row as it is: column name, type, the row's key. */
type Field<R> = readonly [name: string, type: ParquetType, key: keyof R & string];

function fieldColumns<R>(fields: readonly Field<R>[]): Column<R>[] {
  return fields.map(([name, type, key]) => ({ name, type, get: (r: R) => r[key] }));
}

/** Rows back from a table's columns (as readParquet gives them: 64-bit integers may be bigints). */
function readFields<R>(fields: readonly Field<R>[], table: Columns | undefined): R[] {
  const columns = fields.map(([name]) => table?.[name] ?? []);
  const rows = Math.min(...columns.map((c) => c.length));
  const out: R[] = [];
  for (let i = 0; i < rows; i++) {
    const row: Record<string, unknown> = {};
    fields.forEach(([, type, key], c) => {
      const v = columns[c]![i];
      row[key] = type === "string" ? v : type === "bool" ? v === true : num(v);
    });
    out.push(row as R);
  }
  return out;
}

const SEGMENTS: Field<SegmentRow>[] = [
  ["segment", "int64", "segment"],
  ["pid", "int64", "pid"],
  ["tid", "int64", "tid"],
  ["comm", "string", "comm"],
  ["start", "double", "start"],
  ["end_node", "int64", "endNode"],
  ["levels", "int64", "levels"],
  ["cleared", "bool", "cleared"],
  ["start_ip", "string", "startIp"],
  ["end_returns", "string", "endReturns"],
  ["first_ip", "string", "firstIp"],
  ["end_branch", "string", "endBranch"],
];

/** A node's columns but its name, which is an index into the shard's `names` table. */
const NODES: Field<NodeRow>[] = [
  ["node", "int64", "node"],
  ["segment", "int64", "segment"],
  ["parent", "int64", "parent"],
  ["kind", "string", "kind"],
  ["level", "int64", "level"],
  ["calls", "int64", "calls"],
  ["self_insns", "int64", "selfInsns"],
  ["self_time", "double", "selfTime"],
];

/** The function and DSO of each name index (a shard has far fewer names than nodes). */
const NAMES_FIELDS: Field<{ function: string; dso: string }>[] = [
  ["function", "string", "function"],
  ["dso", "string", "dso"],
];

const FRAMES: Field<FrameRow>[] = [
  ["node", "int64", "node"],
  ["start", "double", "start"],
  ["end", "double", "end"],
  ["how", "string", "how"],
];

const SHARD_EDGES: Column<EdgeRow>[] = [
  { name: "from", type: "uint64", get: (r) => u64(r.fromHi, r.fromLo) },
  { name: "to", type: "uint64", get: (r) => u64(r.toHi, r.toLo) },
  { name: "kind", type: "int32", get: (r) => r.kind },
  { name: "count", type: "int64", get: (r) => r.count },
];

const GAPS: Field<GapRow>[] = [
  ["segment", "int64", "segment"],
  ["pid", "int64", "pid"],
  ["tid", "int64", "tid"],
  ["what", "string", "what"],
  ["offset", "int64", "offset"],
  ["message", "string", "message"],
  ["time", "double", "time"],
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
  const nodeNames = d.nodes.map((row) => names.id(row.function, row.dso));
  const nodes = table(fieldColumns(NODES), d.nodes);
  nodes.columns.push({ name: "name", type: "int64" });
  nodes.values.push(nodeNames);
  return {
    segments: table(fieldColumns(SEGMENTS), d.segments),
    nodes,
    names: table(
      fieldColumns(NAMES_FIELDS),
      names.list.map(([f, dso]) => ({ function: f, dso })),
    ),
    frames: table(fieldColumns(FRAMES), d.frames ?? []),
    edges: table(SHARD_EDGES, d.edges),
    gaps: table(fieldColumns(GAPS), d.gaps),
  };
}

export const SHARD_TABLES = ["segments", "nodes", "names", "frames", "edges", "gaps"] as const;

/** A shard's table read back: column name → its values. */
export type Columns = Readonly<Record<string, ArrayLike<unknown>>>;

const num = (v: unknown): number => (typeof v === "bigint" ? Number(v) : (v as number));

/** A shard's data from its tables (table name → its columns, as readParquet gives them). */
export function shardData(
  shard: number,
  clock: string,
  tables: Readonly<Record<string, Columns>>,
): ShardData {
  const names = readFields(NAMES_FIELDS, tables.names);
  const nodes = readFields(NODES, tables.nodes);
  const nameOf: ArrayLike<unknown> = tables.nodes?.name ?? [];
  nodes.forEach((node, i) => {
    const name = names[num(nameOf[i])];
    node.function = name?.function as string;
    node.dso = name?.dso as string;
  });
  const edges = tables.edges ?? {};
  const [from, to, kind, count] = ["from", "to", "kind", "count"].map((c) => edges[c] ?? []) as [
    ArrayLike<unknown>,
    ArrayLike<unknown>,
    ArrayLike<unknown>,
    ArrayLike<unknown>,
  ];
  return {
    shard,
    clock,
    segments: readFields(SEGMENTS, tables.segments),
    nodes,
    frames: readFields(FRAMES, tables.frames),
    edges: Array.from(from, (f, i) =>
      edgeRow(f as bigint | number, to[i] as bigint | number, num(kind[i]), num(count[i])),
    ),
    gaps: readFields(GAPS, tables.gaps),
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

/** The columns that say whose function a row is about (functions and calls tables). */
const WHOSE: Column<{
  input: string;
  pid: number;
  tid: number;
  comm: string;
  function: string;
  dso: string;
}>[] = [
  { name: "input", type: "string", get: (r) => r.input },
  { name: "process", type: "int64", get: (r) => r.pid },
  { name: "thread", type: "int64", get: (r) => r.tid },
  { name: "comm", type: "string", get: (r) => r.comm },
  { name: "function", type: "string", get: (r) => r.function },
  { name: "dso", type: "string", get: (r) => r.dso },
];

const FUNCTIONS: Column<InputFunction>[] = [
  ...WHOSE,
  { name: "calls", type: "int64", get: (r) => r.calls },
  { name: "self_insns", type: "int64", get: (r) => r.selfInsns },
  { name: "total_insns", type: "int64", get: (r) => r.totalInsns },
  { name: "self_time_ns", type: "double", get: (r) => (r.ns ? r.selfTime : 0) },
  { name: "total_time_ns", type: "double", get: (r) => (r.ns ? r.totalTime : 0) },
];

const CALLS: Column<InputCall>[] = [
  ...WHOSE,
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
    const seams = stitcher.seams.map((e) =>
      edgeRow(BigInt(e.from), BigInt(e.to), e.kind === 256 ? EdgeKind.Async : e.kind, 1),
    );
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
