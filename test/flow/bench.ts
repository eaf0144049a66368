/**
 * Flow-decoder benchmark (run by hand, not a test): a long trace of a random program
 * decoded by the block and instruction decoders, in instructions per second. With
 * `--out DIR` it also writes the trace and the code (raw, at 0x400000) for a
 * libipt-based comparison.
 *
 *   node dist/test/flow/bench.js [--steps N] [--runs N] [--shape typical|branchy] [--out DIR]
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { PtEvent, Status } from "../../src/event/types.js";
import { Block, BlockDecoder, Insn, InsnDecoder } from "../../src/flow/index.js";
import type { Image } from "../../src/image/index.js";
import { makeProgram } from "./program.js";

const { values } = parseArgs({
  options: {
    steps: { type: "string", default: "5000000" },
    runs: { type: "string", default: "5" },
    seed: { type: "string", default: "7" },
    out: { type: "string" },
    /** "branchy": many indirect jumps (a TIP every ~9 instructions); "typical": few. */
    shape: { type: "string", default: "typical" },
  },
});

/** Decode everything; the number of instructions. */
function decode(kind: "block" | "insn", trace: Uint8Array, image: Image): number {
  const ev = new PtEvent();
  let insns = 0;
  if (kind === "block") {
    const dec = new BlockDecoder(trace, { image });
    const block = new Block();
    for (let status = dec.syncForward(); status >= 0; status = dec.syncForward()) {
      for (;;) {
        while (status >= 0 && status & Status.EventPending) status = dec.event(ev);
        if (status < 0 || status & Status.Eos) break;
        status = dec.next(block);
        insns += block.ninsn;
        if (status < 0) break;
      }
    }
    return insns;
  }
  const dec = new InsnDecoder(trace, { image });
  const insn = new Insn();
  for (let status = dec.syncForward(); status >= 0; status = dec.syncForward()) {
    for (;;) {
      while (status >= 0 && status & Status.EventPending) status = dec.event(ev);
      if (status < 0 || status & Status.Eos) break;
      status = dec.next(insn);
      if (status < 0) break;
      insns++;
    }
  }
  return insns;
}

const steps = Number(values.steps);
const t0 = performance.now();
const weights =
  values.shape === "branchy" ? [150, 14, 5, 6, 1, 3, 2, 3, 1, 1] : [150, 14, 5, 10, 0.5, 1, 0.2, 3, 0.1, 0.5];
const prog = makeProgram({
  seed: Number(values.seed),
  steps,
  weights,
  functions: 200,
  size: 120,
  record: false,
});
const code = prog.image.sections[0]!;
console.log(
  `program: ${code.size} bytes of code, trace ${prog.trace.length} bytes, generated in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
);
if (values.out) {
  writeFileSync(join(values.out, "bench.pt"), prog.trace);
  writeFileSync(join(values.out, "bench.bin"), code.bytes!.subarray(code.offset, code.offset + code.size));
}
for (const kind of ["block", "insn"] as const) {
  let best = Number.POSITIVE_INFINITY;
  let insns = 0;
  for (let r = 0; r < Number(values.runs); r++) {
    // CPU time, which other processes on the machine disturb less than wall time.
    const start = process.cpuUsage();
    insns = decode(kind, prog.trace, prog.image);
    const used = process.cpuUsage(start);
    best = Math.min(best, (used.user + used.system) / 1000);
  }
  console.log(
    `${kind}: ${insns} instructions in ${best.toFixed(1)} ms: ${(insns / best / 1000).toFixed(2)} Minsn/s`,
  );
}
