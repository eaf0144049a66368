/**
 * Functions from folded stacks (`thread;outer;...;inner weight` lines): per name, the
 * weight of the lines that end in it (self) and of the lines it is on (total: a line
 * counts once per name, however often the name recurs on it). A line's first frame
 * names its thread and is no function; a line of one frame adds nothing.
 *
 * The lines come as a {@link FrameTree}: a frame per node, each after the one above
 * it, a line being the path from a first frame down to the node it ends at. Folded
 * stacks' writer has that tree (FoldedStacks.write); a folded file's text is read
 * into one (session/answers.ts' functionRows). Totals are then a node's weight and
 * its subtree's, for each node whose name is on no frame above it but the first.
 */

/** Lines of folded stacks as a tree of frames (see the module comment). */
export interface FrameTree {
  size: number;
  /** The node above each (-1: a line's first frame); always an earlier node. */
  above: Int32Array;
  /** Each node's name, as an index for {@link nameOf}. */
  name: Int32Array;
  /** Whether a line ends at each node (1), and the weights of the lines that do. */
  ends: Uint8Array;
  weight: Float64Array;
  nameOf(index: number): string;
}

/** One function of folded stacks: its name, its lines' weight (self) and the weight of the lines it is on (total). */
export interface FoldedFunction {
  name: string;
  self: number;
  total: number;
}

/** The functions of `tree`'s lines: every name on a line but as its first frame, in order of its first node. */
export function foldedFunctions(tree: FrameTree): FoldedFunction[] {
  const { size, above, name, ends, weight } = tree;
  const depth = new Int32Array(size);
  for (let i = 0; i < size; i++) depth[i] = above[i]! < 0 ? 0 : depth[above[i]!]! + 1;
  // Each node's subtree: the weight of its lines and whether it has any (a line of one
  // frame reaches only its own node, a first frame, which is no function).
  const sub = new Float64Array(size);
  const onLine = new Uint8Array(size);
  for (let i = size - 1; i >= 0; i--) {
    if (ends[i] !== 0) {
      sub[i]! += weight[i]!;
      onLine[i] = 1;
    }
    const a = above[i]!;
    if (a >= 0) {
      sub[a]! += sub[i]!;
      onLine[a]! |= onLine[i]!;
    }
  }
  const rows = new Map<number, FoldedFunction>();
  for (let i = 0; i < size; i++) {
    if (depth[i] === 0 || onLine[i] === 0) continue;
    const f = name[i]!;
    let row = rows.get(f);
    if (row === undefined) {
      row = { name: tree.nameOf(f), self: 0, total: 0 };
      rows.set(f, row);
    }
    if (ends[i] !== 0) row.self += weight[i]!;
    // The outermost frame of its name on the path (below the first) counts the subtree.
    let outermost = true;
    for (let a = above[i]!; a >= 0 && depth[a] !== 0; a = above[a]!)
      if (name[a] === f) {
        outermost = false;
        break;
      }
    if (outermost) row.total += sub[i]!;
  }
  return [...rows.values()];
}
