/**
 * `ptkit flow` in a decoding thread: the command's setup (its code loaded once per
 * thread and command line), then the flow, or the instruction count, of each piece
 * it is given.
 */

import { NO_WALK_ERRATA, walkErrata } from "../../analysis/coverage-decode.js";
import type { DecisionGraph } from "../../flow/index.js";
import { graphStoreFromEnv } from "../../node/graph-store.js";
import { nodeIo } from "../../node/io.js";
import type { TraceBytes } from "../../packet/trace-bytes.js";
import { type CountPiece, countPiece } from "../../session/count-pieces.js";
import { type FlowPiece, flowPiece } from "../../session/flow-pieces.js";
import { GraphCache } from "../../session/graph-cache.js";
import { LineWriter } from "../../session/io.js";
import type { RawSetup } from "../../session/raw-session.js";
import { setupFlow } from "./flow.js";

let cached: { key: string; setup: RawSetup; graphs?: GraphCache; graph?: DecisionGraph } | undefined;

/** The setup of the command `words` run in `cwd` (made once per thread and command line). */
function setupFor(words: string[], cwd: string): NonNullable<typeof cached> {
  const key = JSON.stringify([cwd, words]);
  if (cached?.key !== key) {
    // What the setup prints (verbose loading, warnings) the command printed already.
    const io = { ...nodeIo(cwd), stdout: () => {}, stderr: () => {} };
    const setup = setupFlow(words, io, new LineWriter(() => {}), (message) => {
      throw new Error(`the command's setup failed in a decoding thread: ${message}`);
    });
    if (typeof setup === "number") throw new Error("the command's setup ended early in a decoding thread");
    cached = { key, setup };
  }
  return cached;
}

export function flowPieceIn(
  words: string[],
  cwd: string,
  trace: TraceBytes,
  start: number,
  stop: number,
): FlowPiece {
  return flowPiece(setupFor(words, cwd).setup, trace, start, stop);
}

/**
 * The instruction count of a piece, on the decision graph this thread keeps for the
 * command (kept between runs too, as the command's own walk keeps it: it is written
 * after a piece that grew it by more than a quarter, as the thread does not know
 * which piece is its last).
 */
export function countPieceIn(words: string[], cwd: string, trace: TraceBytes, stop: number): CountPiece {
  const c = setupFor(words, cwd);
  c.graphs ??= new GraphCache(graphStoreFromEnv());
  c.graph ??= c.graphs.graph(c.setup.image);
  const config = c.setup.pt?.step.config;
  const counted = countPiece(
    c.graph,
    trace,
    stop,
    config ? walkErrata(config.errata, config.addrFilter) : NO_WALK_ERRATA,
  );
  c.graphs.save(0.25);
  return counted;
}
