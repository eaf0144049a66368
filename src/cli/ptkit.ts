/**
 * The `ptkit` command line: subcommand dispatch (the bin entry is main.ts).
 *
 * Each command's module is imported only when that command runs: importing them all
 * would load every library layer, iced-x86 and the demangler whatever the command,
 * and that dominates the start-up of a command on a small file.
 */
import { graphStoreFromEnv } from "../node/graph-store.js";
import { nodeIo } from "../node/io.js";
import type { SessionIo } from "../session/io.js";
import { VERSION } from "./version.js";

/** The module the CLI's decoding threads run: its piece decoders (chunk-worker.ts). */
export const CHUNK_WORKER = new URL("./chunk-worker.js", import.meta.url);

/**
 * The process's io, with the CLI's decoding threads (`--jobs`) and the decision
 * graphs kept between runs (graph-store.ts: PTKIT_CACHE_DIR); paths from `cwd`.
 */
export function commandIo(cwd = process.cwd()): SessionIo {
  const graphs = graphStoreFromEnv();
  return { ...nodeIo(cwd, CHUNK_WORKER), ...(graphs === undefined ? {} : { graphs }) };
}

type Run = (argv: readonly string[], io: SessionIo) => number | Promise<number>;

const COMMANDS: Record<string, { load: () => Promise<Run>; summary: string }> = {
  demo: {
    load: async () => (await import("./demo/demo.js")).runDemo,
    summary: "decode the bundled sample: a summary and a timeline (npm start)",
  },
  dump: {
    load: async () => (await import("./dump/dump.js")).runDump,
    summary: "print every packet of a trace (libipt ptdump compatible)",
  },
  flow: {
    load: async () => (await import("./flow/flow.js")).runFlow,
    summary: "print the executed instructions of a trace (libipt ptxed compatible)",
  },
  latency: {
    load: async () => (await import("./latency/latency.js")).runLatency,
    summary: "how long each function's calls take: exact percentiles, callers, slowest calls",
  },
  perf: {
    load: async () => (await import("./perf/db.js")).runPerfCommand,
    summary: "decode the Intel PT in a perf.data file, like perf script --itrace",
  },
  "perf-dump": {
    load: async () => (await import("./perf/dump.js")).runPerfDump,
    summary: "list a perf.data file's records; extract its Intel PT",
  },
  query: {
    load: async () => (await import("./query/query.js")).runQuery,
    summary: "run SQL on a results database (ptkit shard merge, ptkit perf --db)",
  },
  record: {
    load: async () => (await import("./record/record.js")).runRecord,
    summary: "record Intel PT with perf around a command, then decode it",
  },
  shard: {
    load: async () => (await import("./shard/shard.js")).runShardCommand,
    summary: "decode many recordings on many machines: plan shards, run each, merge into DuckDB",
  },
  simulate: {
    load: async () => (await import("./simulate/simulate.js")).runSimulate,
    summary: "the trace of an execution, or of a program run under valgrind",
  },
  stats: {
    load: async () => (await import("./stats/stats.js")).runStats,
    summary: "packet counts, PSB segments, errors and decode speed",
  },
  symbols: {
    load: async () => (await import("./symbols/symbols.js")).runSymbols,
    summary: "function, offset and source line of addresses in an ELF file",
  },
  web: {
    load: async () => (await import("./web/web.js")).runWeb,
    summary: "the web app: drop a perf.data, see where time went (decoded in the browser)",
  },
};

const HELP = `usage: ptkit <command> [<options>]

ptkit is Intel Processor Trace in TypeScript.

commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(10)}${c.summary}`)
  .join("\n")}

Run 'ptkit <command> --help' for a command's options and examples.

environment:
  PTKIT_CACHE_DIR  where the code's decision graphs are kept between runs, so that
                   a later run over the same binaries does not decode their code
                   again (default $XDG_CACHE_HOME/ptkit or ~/.cache/ptkit, at most
                   512 MiB; empty or 'off': none)
  PTKIT_CODE_CACHE where ptkit's own compiled code is kept for the next run of
                   a command (default: code-cache/ beside its bundle, else
                   ~/.cache/ptkit/code-cache; empty or 'off': none)

examples:
  ptkit demo
  ptkit dump trace.pt
  ptkit flow --elf ./a.out --pt trace.pt
  ptkit latency perf.data
  ptkit perf --branches perf.data
  ptkit perf --db results.duckdb perf.data
  ptkit query results.duckdb "select function, self_insns from functions order by 2 desc limit 10"
  ptkit record -- ./prog
  ptkit simulate --user -o ls.pt -- /bin/ls
  ptkit stats trace.pt
  ptkit symbols ./prog 0x401136
`;

/** Run the command line `argv` (without `node` and the script); resolves to the exit status. */
export async function main(argv: readonly string[], io: SessionIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    io.stdout(HELP);
    return name === undefined ? 1 : 0;
  }
  if (name === "--version") {
    io.stdout(`ptkit ${VERSION}\n`);
    return 0;
  }
  // Own keys only: `ptkit constructor` is an unknown command, not Object's.
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    io.stderr(`ptkit: unknown command '${name}'.\n\n${HELP}`);
    return 1;
  }
  const run = await command.load();
  return run(rest, io);
}

/**
 * {@link main} as the executable runs it: an exception is either the system refusing
 * (an errno code: a one-line message, exit 1) or a bug in ptkit (its stack, exit 70).
 * The fuzzer (tools/fuzz) calls this too, so it judges exactly what users would see.
 */
export async function runCli(argv: readonly string[], io: SessionIo): Promise<number> {
  try {
    return await main(argv, io);
  } catch (e) {
    if (typeof (e as { code?: unknown }).code === "string" && (e as Error).message) {
      // The system refused (a full disk, an unwritable output): say so plainly.
      io.stderr(`ptkit: ${(e as Error).message}\n`);
      return 1;
    }
    // Commands report bad input themselves: anything else is a bug in ptkit.
    io.stderr(
      `ptkit: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n` +
        "This is a bug in ptkit: please report it with the command line and, if you can, the input files.\n",
    );
    return INTERNAL_ERROR;
  }
}

/** The exit code of a bug in ptkit (EX_SOFTWARE). */
export const INTERNAL_ERROR = 70;
