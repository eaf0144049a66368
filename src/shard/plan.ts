/**
 * A shard plan: the decode of a set of inputs cut into shards that run anywhere, in
 * any order, each on its own (`ptkit shard plan` writes it, `ptkit shard run --index N`
 * runs shard N, `ptkit shard merge` checks every shard is there and from this plan).
 *
 * A shard is one Intel PT stream of a perf.data file (a CPU's, in per-CPU mode, or a
 * thread's), or a window of a raw trace file cut at a PSB. Its number is its index in
 * `shards`; its output
 * depends on nothing but the plan and the input files, so a re-run writes the same
 * bytes. The plan's `id` is a hash of everything else in it: outputs carry it, and
 * the merge refuses outputs of another plan.
 *
 * JSON schema "ptkit-shard-plan" version 1:
 * ```
 * { "schema": "ptkit-shard-plan", "version": 1, "id": "5f0c2a9e11d34b70",
 *   "options": ["--kcore", "/data/kcore"],          // given to every shard's decode
 *   "calls": true,                                   // only if asked for: per-call rows
 *   "inputs": [{ "path": "host1/perf.data", "kind": "perf.data", "bytes": 81234 }],
 *   "shards": [{ "input": 0, "stream": 0, "cpus": [0], "tids": [-1], "traceBytes": 40960 },
 *              { "input": 1, "from": 0, "to": 67108960, "traceBytes": 67108960 }] }
 * ```
 * Relative input paths are relative to the plan file's directory.
 */

export const PLAN_SCHEMA = "ptkit-shard-plan";
export const PLAN_VERSION = 1;

export type InputKind = "perf.data" | "raw";

export interface PlanInput {
  path: string;
  kind: InputKind;
  /** The file's size when planned: a shard refuses a file that changed. */
  bytes: number;
}

export interface PlanShard {
  /** Index into the plan's inputs. */
  input: number;
  /** perf.data: the stream (its AUXTRACE queue index); its CPUs or threads, for people. */
  stream?: number;
  cpus?: number[];
  tids?: number[];
  /**
   * A raw trace: the bytes [from, to) of the file, from a PSB to the next shard's (the
   * decode goes on past `to` until it has read the PSB there, as `--jobs` pieces do).
   */
  from?: number;
  to?: number;
  /** Bytes of trace the shard decodes. */
  traceBytes: number;
}

export interface ShardPlan {
  schema: typeof PLAN_SCHEMA;
  version: typeof PLAN_VERSION;
  id: string;
  options: string[];
  /** Shards record every call too (the `calls` table). */
  calls?: boolean;
  inputs: PlanInput[];
  shards: PlanShard[];
}

/** The plan of these inputs and shards, with its id. */
export function makePlan(
  options: readonly string[],
  inputs: readonly PlanInput[],
  shards: readonly PlanShard[],
  calls = false,
): ShardPlan {
  const body = {
    options: [...options],
    ...(calls ? { calls } : {}),
    inputs: [...inputs],
    shards: [...shards],
  };
  return { schema: PLAN_SCHEMA, version: PLAN_VERSION, id: planId(body), ...body };
}

/** The plan's JSON text (one shard per line: plans of thousands of shards stay readable). */
export function planText(plan: ShardPlan): string {
  const head = JSON.stringify({ ...plan, shards: [] }).slice(0, -3);
  const shards = plan.shards.map((s) => `  ${JSON.stringify(s)}`).join(",\n");
  return `${head}[\n${shards}\n]}\n`;
}

/** A plan read from JSON text, checked; or what is wrong with it. */
export function parsePlan(text: string): ShardPlan | string {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    return `not JSON (${(e as Error).message})`;
  }
  const p = doc as Partial<ShardPlan>;
  if (typeof p !== "object" || p === null || p.schema !== PLAN_SCHEMA)
    return `not a shard plan (no "schema": "${PLAN_SCHEMA}")`;
  if (p.version !== PLAN_VERSION)
    return `plan version ${String(p.version)}; this ptkit reads version ${PLAN_VERSION}`;
  if (!Array.isArray(p.options) || !p.options.every((o) => typeof o === "string")) return `bad "options"`;
  if (!Array.isArray(p.inputs)) return `bad "inputs"`;
  for (const [i, input] of p.inputs.entries()) {
    if (
      typeof input?.path !== "string" ||
      (input.kind !== "perf.data" && input.kind !== "raw") ||
      !Number.isSafeInteger(input.bytes)
    )
      return `bad input ${i}`;
  }
  if (!Array.isArray(p.shards)) return `bad "shards"`;
  for (const [i, s] of p.shards.entries()) {
    if (!Number.isSafeInteger(s?.input) || s.input < 0 || s.input >= p.inputs.length) return `bad shard ${i}`;
    if (s.stream !== undefined && !Number.isSafeInteger(s.stream)) return `bad shard ${i}`;
    const bytes = p.inputs[s.input]!.bytes;
    if (s.from !== undefined && (!Number.isSafeInteger(s.from) || s.from < 0 || s.from > bytes))
      return `bad shard ${i}`;
    if (s.to !== undefined && (!Number.isSafeInteger(s.to) || s.to < (s.from ?? 0) || s.to > bytes))
      return `bad shard ${i}`;
    if (!Number.isSafeInteger(s.traceBytes)) return `bad shard ${i}`;
  }
  if (p.calls !== undefined && p.calls !== true) return `bad "calls"`;
  const plan = p as ShardPlan;
  const id = planId({
    options: plan.options,
    ...(plan.calls ? { calls: true } : {}),
    inputs: plan.inputs,
    shards: plan.shards,
  });
  if (plan.id !== id) return `its id ${String(plan.id)} does not match its contents (${id}): was it edited?`;
  return plan;
}

/**
 * The id of a plan's contents: FNV-1a (64-bit, as two 32-bit halves) of their JSON,
 * each object's keys sorted, as 16 hex digits.
 */
export function planId(body: {
  options: readonly string[];
  calls?: boolean;
  inputs: readonly PlanInput[];
  shards: readonly PlanShard[];
}): string {
  const bytes = new TextEncoder().encode(canonical(body));
  // FNV-1a 64: offset basis 0xcbf29ce484222325, prime 0x100000001b3 = 2^40 + 0x1b3.
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  for (const b of bytes) {
    lo = (lo ^ b) >>> 0;
    // (hi:lo) * prime mod 2^64: lo * 0x1b3 (its carry into hi), hi * 0x1b3, and lo << 40 (lo << 8 into hi).
    const loMul = lo * 0x1b3;
    hi = (Math.imul(hi, 0x1b3) + Math.floor(loMul / 0x1_0000_0000) + (lo << 8)) >>> 0;
    lo = loMul >>> 0;
  }
  return (hi >>> 0).toString(16).padStart(8, "0") + (lo >>> 0).toString(16).padStart(8, "0");
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(",")}}`;
  }
  return JSON.stringify(v);
}
