/**
 * ptkit's shard layer: decoding cut into shards that any machine can run (a plan of
 * shards, the tables each shard writes, their merge), and the Parquet files the
 * tables are written in. No Node-only API: the CLI's `ptkit shard` drives it.
 */
export {
  type HalvesColumn,
  type ParquetColumn,
  type ParquetOptions,
  type ParquetType,
  type ParquetValues,
  writeParquet,
} from "./parquet.js";
