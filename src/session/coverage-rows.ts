/**
 * Coverage by function: a `ptkit-coverage` file's blocks grouped by the function they
 * are in, with what ran there, those that ran the most instructions first (the web
 * app's coverage table, and the functions annotate.ts annotates).
 */
import type { Coverage } from "../analysis/index.js";
import { hex64 } from "../base/halves.js";
import { blockFunction } from "./answer-files.js";

/** A basic block that ran, as the coverage file has it. */
export interface CoverageBlock {
  /** Its first and last instruction's addresses, 0x-hex. */
  start: string;
  end: string;
  insns: number;
  /** Times it was entered. */
  count: number;
  /** `function` or `function+0xoff`. */
  symbol?: string;
}

/** Coverage of one function: its basic blocks that ran, how often, and the instructions run there. */
export interface CoverageRow {
  name: string;
  blocks: number;
  /** Block entries. */
  entries: number;
  insns: number;
  /** The blocks, by address. */
  list: CoverageBlock[];
}

/** Coverage by function from a `ptkit-coverage` file's blocks (`symbol` is `name` or `name+0xoff`). */
export function coverageRows(coverageJson: string): CoverageRow[] {
  if (coverageJson === "") return [];
  const doc = JSON.parse(coverageJson) as { blocks?: CoverageBlock[] };
  return coverageRowsOf(doc.blocks ?? []);
}

/** The blocks of `coverage` as its JSON has them, `symbol` naming their starts. */
export function coverageBlocks(
  coverage: Coverage,
  symbol: (hi: number, lo: number) => string | undefined,
): CoverageBlock[] {
  return coverage.blockList().map((b) => {
    const block: CoverageBlock = {
      start: `0x${hex64(b.startHi, b.startLo, 0)}`,
      end: `0x${hex64(b.endHi, b.endLo, 0)}`,
      insns: b.insns,
      count: b.count,
    };
    const name = symbol(b.startHi, b.startLo);
    if (name !== undefined) block.symbol = name;
    return block;
  });
}

/** {@link coverageRows} from the blocks. */
export function coverageRowsOf(blocks: readonly CoverageBlock[]): CoverageRow[] {
  const rows = new Map<string, CoverageRow>();
  for (const b of blocks) {
    const name = blockFunction(b.symbol);
    let r = rows.get(name);
    if (r === undefined) {
      r = { name, blocks: 0, entries: 0, insns: 0, list: [] };
      rows.set(name, r);
    }
    r.blocks++;
    r.entries += b.count;
    r.insns += b.insns * b.count;
    r.list.push(b);
  }
  return [...rows.values()].sort((a, b) => b.insns - a.insns || (a.name < b.name ? -1 : 1));
}
