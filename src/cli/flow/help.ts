/** `ptkit flow --help`: ptxed's options, in ptxed's words, plus ptkit's own. */
export const FLOW_HELP = `usage: ptkit flow [<options>]

Reconstruct the instruction flow of a raw Intel PT trace from the code it ran, like
libipt's ptxed: one line per instruction, events and errors in brackets. Options are
read in order: load code and set the configuration before --pt.

options:
  --help|-h                            this text.
  --version                            display version information and exit.
  --att                                print instructions in AT&T syntax (default: Intel).
  --no-inst                            do not print instructions (only addresses).
  --quiet|-q                           do not print anything (except errors).
  --offset                             print the offset into the trace file.
  --time                               print the current timestamp.
  --raw-insn                           print the raw bytes of each instruction.
  --check                              perform checks (expensive).
  --resync-on-error                    resync on decode errors more aggressively.
  --iscache-limit <size>               accepted for compatibility; ptkit keeps loaded
                                       files in memory.
  --event:time                         print the tsc for events if available.
  --event:ip                           print the ip of events if available.
  --event:tick                         request tick events.
  --event:iflags                       request iflags events.
  --filter:addr<n>_cfg <cfg>           set IA32_RTIT_CTL.ADDRn_CFG to <cfg>.
  --filter:addr<n>_a <base>            set IA32_RTIT_ADDRn_A to <base>.
  --filter:addr<n>_b <limit>           set IA32_RTIT_ADDRn_B to <limit>.
  --stat                               print statistics (even when quiet).
                                       collects all statistics unless one or more are selected.
  --stat:insn                          collect number of instructions.
  --stat:blocks                        collect number of blocks.
  -j, --jobs <n>                       decode on <n> threads (default: the available cores
                                       with --quiet, else one; small traces and outputs that
                                       need time use one). Instructions printed from pieces
                                       wait in memory for their turn: hundreds of MB a thread.
  --verbose|-v                         print various information (even when quiet).
  --pt <file>[:<from>[-<to>]]          load the processor trace data from <file>.
                                       an optional offset or range can be given.
  --elf <file>[:<base>]                load an ELF from <file> at address <base>.
                                       use the default load address if <base> is omitted.
  --raw <file>[:<from>[-<to>]]:<base>  load a raw binary from <file> at address <base>.
                                       an optional offset or range can be given.
  --cpu none|f/m[/s]                   set cpu to the given value and decode according to:
                                         none     spec (default)
                                         f/m[/s]  family/model[/stepping]
  --mtc-freq <n>                       set the MTC frequency (IA32_RTIT_CTL[17:14]) to <n>.
  --nom-freq <n>                       set the nominal frequency (MSR_PLATFORM_INFO[15:8]) to <n>.
  --cpuid-0x15.eax                     set the value of cpuid[0x15].eax.
  --cpuid-0x15.ebx                     set the value of cpuid[0x15].ebx.
  --insn-decoder                       use the instruction flow decoder.
  --insn:keep-tcal-on-ovf              preserve timing calibration on overflow.
  --block-decoder                      use the block decoder (default; unnamed, with
                                       --quiet and at most --stat:insn, the code's
                                       decision graph is walked first, faster).
  --block:show-blocks                  show blocks in the output.
  --block:end-on-call                  set the end-on-call block decoder flag.
  --block:end-on-jump                  set the end-on-jump block decoder flag.
  --block:keep-tcal-on-ovf             preserve timing calibration on overflow.
  --sb:compact | --sb                  show sideband records in compact format.
  --sb:verbose                         show sideband records in verbose format.
  --sb:filename                        show the filename on sideband records.
  --sb:offset                          show the offset on sideband records.
  --sb:time                            show the time on sideband records.
  --sb:switch                          print the new image name on context switches.
  --sb:warn                            show sideband warnings.
  --pevent:primary/secondary <file>[:<from>[-<to>]]
                                       load a perf_event sideband stream from <file>.
                                       the primary stream switches images on context switches.
  --pevent:sample-type <val>           set perf_event_attr.sample_type to <val> (default: 0).
  --pevent:sample-config <id>:<val>    use sample type <val> for records with identifier <id>.
  --pevent:time-zero <val>             set perf_event_mmap_page.time_zero to <val> (default: 0).
  --pevent:time-shift <val>            set perf_event_mmap_page.time_shift to <val> (default: 0).
  --pevent:time-mult <val>             set perf_event_mmap_page.time_mult to <val> (default: 1).
  --pevent:tsc-offset <val>            apply perf events <val> ticks earlier.
  --pevent:kernel-start <val>          the start address of the kernel.
  --pevent:sysroot <path>              prepend <path> to sideband filenames.
  --pevent:kcore <file>[:<base>]       load the kernel from a core dump (an ELF file), as --elf does.
  --pevent:vdso-x64 <file>             use <file> as 64-bit vdso.
  --pevent:vdso-x32 <file>             use <file> as x32 vdso.
  --pevent:vdso-ia32 <file>            use <file> as 32-bit vdso.
  (the --pevent:* parameters apply to the --pevent:primary/secondary streams after them.)

analysis outputs (ptkit's own; files are written, stdout keeps the listing above, use
--quiet to have none; times come from TSC and, through tick events that are not
printed unless --event:tick asks for them, MTC/CYC; in ns when --nom-freq gives the TSC
frequency, else in TSC ticks, else in instructions: then a warning says so and the
timeline labels its unit, in otherData.timeUnit and the process name):
  --timeline <file>                    function-call timeline as Chrome trace-event JSON
                                       (open it in ui.perfetto.dev, chrome://tracing or
                                       speedscope): begin/end events, parents first.
  --perfetto <file>                    the same timeline in Perfetto's protobuf format
                                       (ui.perfetto.dev): about a third of the JSON, and it
                                       opens at any size; times as the JSON's.
  --min-duration <d>                   leave out of both timelines the calls shorter than d
                                       (10us, 500ns, 2ms; a bare number is in the clock's
                                       unit) and everything they called.
  --folded <file>                      folded stacks for flame graphs (flamegraph.pl,
                                       speedscope): "frame;frame;frame weight" lines.
  --folded-weight insn|time            weigh folded stacks by instructions (default) or time.
  --coverage <file>                    basic blocks and edges with execution counts, as JSON.
                                       Every transfer is an edge: branches taken and not
                                       taken, returns, indirect and far transfers, interrupts.
                                       None crosses a gap (tracing off, overflow, decode
                                       error): the block after one is reached from nowhere.
  --afl-map <file>                     the edges as AFL++'s QEMU mode counts them: a 64 KiB
                                       map (raw bytes) indexed by loc ^ prev, where loc =
                                       ((addr >> 4) ^ (addr << 8)) & 0xffff of the block
                                       entered, prev = loc >> 1 of the block before (0 after
                                       a gap); counts stop at 255.
  --edges <file>                       the edges as text: "0xFROM 0xTO COUNT" lines, sorted.
                                       With --quiet (and at most --stat:insn), --coverage,
                                       --afl-map, --edges and --folded weighed by instructions
                                       (with no --timeline or --jsonl) are made straight from
                                       the packets through a graph of the code's decision points
                                       (the map 3x faster); a trace with what that does not cover
                                       (16/32-bit code, PTWRITE, power or TSX events) is decoded
                                       the general way, to the same files.
  --jsonl <file>                       instructions, branches, calls, returns and events as
                                       JSON Lines.
  --latency <file>                     call durations per function as JSON: count, total,
                                       nearest-rank p50/p90/p99, max, a log2 histogram, split
                                       by caller, and the slowest calls with their stacks;
                                       exact, from every call that returned (ptkit latency
                                       prints it as a report).
  --symbols [<file>[:<base>]]          functions are named without it: from the symbol
                                       tables of the --elf files and of --raw files that are
                                       ELF files (where none names a frame, a warning says
                                       why, once per file). <file>: symbols only, e.g. an
                                       unstripped copy or the debug file of a stripped --elf.
  --stack-depth <n>                    frames kept per call stack (default 4096; deeper
                                       ones are counted only).

@<file> reads options from <file>, one per line with its argument (e.g. --elf prog:0x1000);
ptkit simulate writes such a file beside each trace it makes from a program.

You must specify at least one binary or ELF file (--raw|--elf), or sideband that maps them.
You must specify exactly one processor trace file (--pt).

examples:
  ptkit flow --elf ./a.out --pt trace.pt
  ptkit flow --cpu 6/94/3 --elf loopy --pt loopy.pt --stat
  ptkit flow --raw code.bin:0x1000 --no-inst --offset --pt trace.pt:0x100-0x2000
  ptkit flow --cpu 6/85/4 --pevent:sample-type 0x10086 --pevent:time-shift 31 \\
             --pevent:time-mult 581029125 --pevent:time-zero 18444502336406842448 \\
             --pevent:sysroot . --sb:switch --pevent:primary primary.sideband.pevent --pt pt.bin
  ptkit flow --elf ./a.out --nom-freq 37 --pt trace.pt --quiet \\
             --timeline calls.json --folded stacks.folded --folded-weight time
  ptkit flow --elf ./target --pt trace.pt --quiet --coverage cov.json --afl-map afl.bin \\
             --edges edges.txt
`;
