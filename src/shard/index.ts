/**
 * ptkit's shard layer: decoding cut into shards that any machine can run (a plan of
 * shards, the tables each shard writes, their merge), and the Parquet files the
 * tables are written in. No Node-only API: the CLI's `ptkit shard` drives it.
 */

export { FunctionNames } from "./names.js";
export {
  type HalvesColumn,
  type ParquetColumn,
  type ParquetOptions,
  type ParquetType,
  type ParquetValues,
  writeParquet,
} from "./parquet.js";
export { type ParquetTable, readParquet } from "./parquet-read.js";
export {
  type InputKind,
  makePlan,
  PLAN_SCHEMA,
  PLAN_VERSION,
  type PlanInput,
  type PlanShard,
  parsePlan,
  planId,
  planText,
  type ShardPlan,
} from "./plan.js";
export {
  type FrameRow,
  type GapRow,
  type NodeRow,
  newSegment,
  SegmentRecorder,
  type SegmentRow,
  UNSTITCHED,
} from "./segments.js";
export { type CallRow, type FunctionRow, type SeamEdge, type ShardStacks, Stitcher } from "./stitch.js";
export {
  type Columns,
  type EdgeRow,
  type Results,
  ResultsBuilder,
  SHARD_TABLES,
  type ShardData,
  shardData,
  shardProblem,
  shardTables,
  TABLES_SCHEMA,
  TABLES_VERSION,
  type TableData,
} from "./tables.js";
export { TablesOut } from "./tables-out.js";
