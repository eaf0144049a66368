/**
 * Fewer, larger chunks for the bundled executable (see bundle-cli.ts).
 *
 * With code splitting, esbuild puts each module in the chunk of the set of entry points
 * that reach it (the executable's entry and every `import()` target): a module that
 * `stats`, `dump` and `flow` use and one that only `stats` and `flow` use land in two
 * files. It does not know that a command is only ever loaded after the entry, so the
 * sets are fine-grained and a command loads a dozen files of a few hundred bytes, each
 * costing Node's module loader about as much as twenty-odd KB more code would.
 *
 * This plans merges of chunks: a small chunk whose set is part of a larger chunk's set
 * joins it when what that saves in files outweighs the code the other entries then load
 * needlessly. A merge is made by importing the small chunk's modules at the END of the
 * entries that did not reach them (esbuild then sees them reached by the larger set): a
 * module's imports are evaluated in the order written, so everything an entry imported
 * before is still evaluated in the same order, and the added modules after it. A merge
 * never adds modules to what the executable's entry loads (`ptkit --help` stays small),
 * nor a module that imports a package (iced-x86, fzstd, ...: loading those costs far
 * more than their size here says) or that is in an import cycle (where the module
 * first imported decides the order of evaluation).
 */

/** One module of the graph (esbuild's metafile inputs, reduced). */
export interface PlanModule {
  /** Size of its code in bytes. */
  bytes: number;
  /** Modules it imports statically (ptkit's own, not packages). */
  imports: readonly string[];
  /** Modules it imports with `import()`. */
  dynamic: readonly string[];
  /** It imports a package statically. */
  importsPackage: boolean;
}

export interface ChunkPlan {
  /** Lazy entry -> the modules to import at its end. */
  additions: Map<string, string[]>;
  /** Files and bytes of code the entry and each lazy entry load, before and after. */
  before: LoadEstimate;
  after: LoadEstimate;
}

/** Per entry (the executable's entry first, then each `import()` target): files and bytes loaded. */
export type LoadEstimate = Map<string, { files: number; bytes: number }>;

/**
 * Plan merges for the graph `modules` whose entry is `entry`. `bytesPerFile` is what
 * loading one more file costs, in bytes of code of the same cost; only chunks of at
 * most `maxMerged` bytes are merged into others (bigger ones are worth their file).
 */
export function planChunks(
  modules: ReadonlyMap<string, PlanModule>,
  entry: string,
  bytesPerFile: number,
  maxMerged = Number.POSITIVE_INFINITY,
): ChunkPlan {
  const lazy = [...new Set([...modules.values()].flatMap((m) => m.dynamic))].filter((m) => m !== entry);
  const entries = [entry, ...lazy];
  const inCycle = cycleMembers(modules);
  // Entry modules stay where they are: each has its file anyway.
  const pinned = (m: string) =>
    inCycle.has(m) || modules.get(m)?.importsPackage === true || entries.includes(m);
  const additions = new Map<string, string[]>();

  const bit = (i: number) => 1n << BigInt(i);
  /** Each module's set of entries reaching it (bit i: entries[i]), with `additions`. */
  const reach = (): Map<string, bigint> => {
    const masks = new Map<string, bigint>();
    entries.forEach((start, i) => {
      const seen = new Set([start]);
      const todo = [start];
      while (todo.length > 0) {
        const m = todo.pop()!;
        masks.set(m, (masks.get(m) ?? 0n) | bit(i));
        for (const next of [...(modules.get(m)?.imports ?? []), ...(additions.get(m) ?? [])])
          if (!seen.has(next)) {
            seen.add(next);
            todo.push(next);
          }
      }
    });
    return masks;
  };

  /** Files and bytes each entry loads (a lazy entry: with the executable's entry). */
  const estimate = (masks: ReadonlyMap<string, bigint>): LoadEstimate => {
    const out: LoadEstimate = new Map();
    entries.forEach((name, i) => {
      const files = new Set<bigint>();
      let bytes = 0;
      for (const [m, mask] of masks)
        if (mask & (bit(i) | 1n)) {
          files.add(mask);
          bytes += modules.get(m)?.bytes ?? 0;
        }
      out.set(name, { files: files.size, bytes });
    });
    return out;
  };
  const cost = (e: LoadEstimate) => {
    let sum = 0;
    for (const { files, bytes } of e.values()) sum += files * bytesPerFile + bytes;
    return sum;
  };

  let masks = reach();
  const before = estimate(masks);
  let current = cost(before);
  for (;;) {
    const groups = new Map<bigint, string[]>();
    for (const [m, mask] of masks) groups.set(mask, [...(groups.get(mask) ?? []), m]);
    let best: { cost: number; masks: Map<string, bigint>; adds: Map<string, string[]> } | undefined;
    for (const [small, members] of groups) {
      if (members.some(pinned)) continue;
      if (members.reduce((sum, m) => sum + (modules.get(m)?.bytes ?? 0), 0) > maxMerged) continue;
      for (const large of groups.keys()) {
        // A proper superset, and not one that would add to the executable's entry.
        if (large === small || (large & small) !== small || (large & ~small & 1n) !== 0n) continue;
        const adds = new Map(additions);
        entries.forEach((e, i) => {
          if (large & ~small & bit(i)) adds.set(e, [...(adds.get(e) ?? []), ...members]);
        });
        const saved = new Map(additions);
        replace(additions, adds);
        const trial = reach();
        replace(additions, saved);
        // What the merge drags along must obey the same rules.
        const changed = [...trial].filter(([m, mask]) => mask !== masks.get(m)).map(([m]) => m);
        if (changed.some(pinned)) continue;
        const c = cost(estimate(trial));
        if (c < current && (best === undefined || c < best.cost)) best = { cost: c, masks: trial, adds };
      }
    }
    if (best === undefined) break;
    replace(additions, best.adds);
    masks = best.masks;
    current = best.cost;
  }
  // Each module once, in the order first added.
  for (const [e, added] of additions) additions.set(e, [...new Set(added)]);
  return { additions, before, after: estimate(masks) };
}

function replace<K, V>(target: Map<K, V>, source: ReadonlyMap<K, V>): void {
  target.clear();
  for (const [k, v] of source) target.set(k, v);
}

/** Modules in a cycle of static imports (Tarjan's strongly connected components). */
function cycleMembers(modules: ReadonlyMap<string, PlanModule>): Set<string> {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const members = new Set<string>();
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of modules.get(v)?.imports ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || modules.get(v)?.imports.includes(v))
        for (const c of component) members.add(c);
    }
  };
  for (const v of modules.keys()) if (!index.has(v)) visit(v);
  return members;
}
