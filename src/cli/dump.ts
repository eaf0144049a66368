/** `ptkit dump`: the ptdump-compatible packet listing. */
import { DUMP_HELP, parseDumpArgs } from "./dump-options.js";
import { Dumper } from "./dumper.js";
import { noPsbHint, traceFileProblem } from "./file-kind.js";
import { openFileRange, parseFileRange, type TraceInternals } from "./file-range.js";
import { type CliIo, LineWriter } from "./io.js";
import { Progress } from "./progress.js";
import { VERSION } from "./version.js";

/** Run `ptkit dump` with `argv` (options and file, no command name); resolves to the exit code. */
export async function runDump(
  argv: readonly string[],
  io: CliIo,
  internal: TraceInternals = {},
): Promise<number> {
  const args = parseDumpArgs(argv);
  switch (args.kind) {
    case "help":
      io.stdout(DUMP_HELP);
      return 0;
    case "version":
      io.stdout(`ptkit dump ${VERSION}\n`);
      return 0;
    case "error":
      io.stderr(`ptkit dump: ${args.message}\nUse --help or -h for help.\n`);
      return 1;
  }
  const { options } = args;
  if (options.file === undefined) {
    io.stderr(
      `ptkit dump: No processor trace file specified.\n${DUMP_HELP.split("\n")[0]}\n` +
        "example: ptkit dump trace.pt\nUse --help or -h for help.\n",
    );
    return 1;
  }
  const range = parseFileRange(options.file);
  if (typeof range === "string") {
    io.stderr(`ptkit dump: bad file ${options.file}: ${range}.\n`);
    return 1;
  }
  let progress: Progress | undefined;
  // The progress line is cleared before each piece of the listing (both may go to the terminal).
  const out = new LineWriter((text) => {
    progress?.done();
    io.stdout(text);
  });
  const fail = (message: string): number => {
    out.flush();
    io.stderr(`ptkit dump: ${message}\n`);
    return 1;
  };
  // Errata diagnostics come before loading, as in ptdump.
  const dumper = new Dumper(options, out, (note) => {
    progress?.done();
    io.stderr(`ptkit dump: ${note}\n`);
  });
  const problem = traceFileProblem(io, range.path);
  if (problem !== undefined) return fail(problem);
  const trace = openFileRange(io, range, internal.windowSize);
  if (typeof trace === "string") return fail(trace);
  if (options.sideband.channels.length > 0) {
    const { openSideband } = await import("./sideband.js"); // the perf layer, only with --pevent
    const session = openSideband(io, out, options.sideband, "dump");
    if (typeof session === "string") return fail(session);
    dumper.sideband = session;
  }
  const bar = new Progress(io, "dumping", trace.size);
  progress = bar;
  dumper.onProgress = (offset) => bar.update(offset);
  dumper.run(trace);
  out.flush();
  bar.done();
  // Nothing to dump is an error (without --no-sync, which starts at the first byte).
  if (!dumper.synced) return fail(`${noPsbHint(io, range.path)}.`);
  return 0;
}
