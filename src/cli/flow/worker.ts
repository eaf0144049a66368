/**
 * `ptkit flow` in a decoding thread: the command's setup (its code loaded once per
 * thread and command line), then the flow of each piece it is given.
 */

import { nodeIo } from "../../node/io.js";
import type { TraceBytes } from "../../packet/trace-bytes.js";
import { type FlowPiece, flowPiece } from "../../session/flow-pieces.js";
import { LineWriter } from "../../session/io.js";
import type { RawSetup } from "../../session/raw-session.js";
import { setupFlow } from "./flow.js";

let cached: { key: string; setup: RawSetup } | undefined;

export function flowPieceIn(
  words: string[],
  cwd: string,
  trace: TraceBytes,
  start: number,
  stop: number,
): FlowPiece {
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
  return flowPiece(cached.setup, trace, start, stop);
}
