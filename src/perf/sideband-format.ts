/**
 * The two layouts of a pevent record's text (see sideband-text.ts), in a module of
 * its own: option parsers name them without loading the perf layer's code.
 */
export const SidebandFormat = { Compact: 1, Verbose: 2 } as const;
export type SidebandFormat = (typeof SidebandFormat)[keyof typeof SidebandFormat];
