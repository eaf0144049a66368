/** The `ptkit` command line: subcommand dispatch (the bin entry is main.ts). */
import { runDemo } from "./demo.js";
import { runDump } from "./dump.js";
import { runFlow } from "./flow.js";
import type { CliIo } from "./io.js";
import { runPerf } from "./perf.js";
import { runPerfDump } from "./perf-dump.js";
import { runRecord } from "./record.js";
import { runSimulate } from "./simulate.js";
import { runStats } from "./stats.js";
import { runSymbols } from "./symbols-cmd.js";
import { VERSION } from "./version.js";

const COMMANDS: Record<string, { run: (argv: readonly string[], io: CliIo) => number; summary: string }> = {
  demo: { run: runDemo, summary: "decode the bundled sample: a summary and a timeline (npm start)" },
  dump: { run: runDump, summary: "print every packet of a trace (libipt ptdump compatible)" },
  flow: { run: runFlow, summary: "print the executed instructions of a trace (libipt ptxed compatible)" },
  perf: { run: runPerf, summary: "decode the Intel PT in a perf.data file, like perf script --itrace" },
  "perf-dump": { run: runPerfDump, summary: "list a perf.data file's records; extract its Intel PT" },
  record: { run: runRecord, summary: "record Intel PT with perf around a command, then decode it" },
  simulate: { run: runSimulate, summary: "the trace of an execution, or of a program run under valgrind" },
  stats: { run: runStats, summary: "packet counts, PSB segments, errors and decode speed" },
  symbols: { run: runSymbols, summary: "function, offset and source line of addresses in an ELF file" },
};

const HELP = `usage: ptkit <command> [<options>]

ptkit is Intel Processor Trace in TypeScript.

commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(10)}${c.summary}`)
  .join("\n")}

Run 'ptkit <command> --help' for a command's options and examples.

examples:
  ptkit demo
  ptkit dump trace.pt
  ptkit flow --elf ./a.out --pt trace.pt
  ptkit perf --branches perf.data
  ptkit record -- ./prog
  ptkit simulate --user -o ls.pt -- /bin/ls
  ptkit stats trace.pt
  ptkit symbols ./prog 0x401136
`;

export function main(argv: readonly string[], io: CliIo): number {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    io.stdout(HELP);
    return name === undefined ? 1 : 0;
  }
  if (name === "--version") {
    io.stdout(`ptkit ${VERSION}\n`);
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    io.stderr(`ptkit: unknown command '${name}'.\n\n${HELP}`);
    return 1;
  }
  return command.run(rest, io);
}

/**
 * {@link main} as the executable runs it: an exception is either the system refusing
 * (an errno code: a one-line message, exit 1) or a bug in ptkit (its stack, exit 70).
 * The fuzzer (tools/fuzz) calls this too, so it judges exactly what users would see.
 */
export function runCli(argv: readonly string[], io: CliIo): number {
  try {
    return main(argv, io);
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
