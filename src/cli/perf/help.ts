/** `ptkit perf --help`. */
export const PERF_HELP = `usage: ptkit perf [<options>] <perf.data>
       ptkit perf [-i <perf.data>] [--itrace=<opts>] [-F <fields>] ...

Decode the Intel PT of a perf.data file (perf record -e intel_pt//) like
perf script --itrace, from the file alone: each process's code comes from the
binaries its MMAP/MMAP2 records name (COMM exec, FORK and EXIT followed), the
running thread of each CPU from the switch records, the decoder set-up (errata,
MTC, nominal frequency, TSC:CTC ratio) from the file. For each stream (one per
CPU, or per thread): a [stream ...] line, then one line per executed
instruction (its address), [cpu C pid P tid T] when the thread changes, events
in brackets as ptxed prints them, and errors as [offset-in-stream: error at tsc
T]; decoding goes on at the next PSB (the other outputs go on where perf's
decoder does: at the next address a packet gives whole). A binary that cannot be
found is reported once, with how many addresses needed it.

Recorded without switch records, the thread is followed by CR3: a PIP switches
to the thread seen running with that CR3 (in ITRACE_START or the sample_id of
its MMAP/COMM records); an unknown CR3 runs pid -1 (kernel code only) until its
thread is seen.

A file is read a piece at a time: each stream a window of a few MiB (cut at
PSBs), so memory stays bounded whatever the file's size. <perf.data> may be -
for standard input (perf record -o - ...| ptkit perf -): a pipe cannot be read
twice, so it is held in memory whole.

options:
  --elf <file>[:<base>]  use this file for the mmaps of the same path or file
                         name; one no mmap names (or with a base) is loaded for
                         every process, as ptxed --elf does. Repeatable.
  --symfs <dir>          look binaries up under DIR (also: --sysroot).
  --buildid-dir <dir>    the build-id cache (default ~/.debug): DIR/.build-id/
                         xx/yyyy[/elf] and DIR/<path>/<build-id>/elf, with the
                         build ids the file recorded.
  --kcore <file>         kernel code: a copy of /proc/kcore, mapped as it is.
  --vmlinux <file>       kernel code: the kernel's ELF file, moved to where it
                         ran (KASLR) by the kernel map perf recorded
                         ([kernel.kallsyms]_text: the run-time address of _text).
  --cpu <n>              only the stream of CPU n.
  --tid <n>              only what thread n runs.
  --time-range <a>,<b>   only from a to b (either may be empty): perf time in
                         seconds as perf script prints it (123.456789), or a
                         TSC value (an integer). Exact to the branch: Intel PT
                         times branch packets (CYC, MTC, TSC), not single
                         instructions; without CYC, to the MTC period.
  --branches             taken branches instead, as perf script --itrace=b
                         -F flags,ip,addr prints them.
  --calls                calls, returns, tr strt and tr end only (like --branches;
                         perf script --itrace=cr).
  --sym                  with --branches or --calls: each address followed by
                         its function and module, name+0xoff (dso), as perf
                         script -F flags,ip,sym,symoff,dso,addr prints them
                         ([unknown] where there is none); in --jsonl, fromSym
                         and toSym. C++ and Rust names are demangled.
  --no-demangle          with --sym: names as the symbol tables spell them.
  --jsonl                one JSON object per line (instruction, branch, event,
                         error, switch), each with cpu, pid, tid, time and tsc.
  -q, --quiet            print only errors (and with the files below, a summary
                         line: files written, instructions, calls, threads).
  --insn-decoder         decode with the instruction decoder even where no
                         instruction is printed (the block decoder, 4-5 times
                         faster, gives the same output).
  -h, --help             this text.

perf script's options (perf 6.1's meaning; with any of -i, --itrace, -F,
--call-trace, --call-ret-trace, or no file at all, ptkit perf prints perf
script's lines instead of its own):
  -i, --input <file>     the perf.data file (default ./perf.data).
  --itrace[=<opts>]      which samples: i<n>i an instruction sample every n
                         instructions, i<n>ns/us/ms/t every period of time
                         (a bare i: 100us; a number alone: ns; i0ns: every
                         instruction), b all branches, c
                         calls (and trace ends), r returns (and trace begins),
                         e errors (perf's "instruction trace error" lines with
                         its codes and messages; decoding goes on where perf's
                         does: at the next address a packet gives whole, and a
                         binary that cannot be read is reported twice), p power
                         events (psb, cbr, mwait, pwre, exstop, pwrx lines), x
                         transactions, w ptwrite (perf's lines), s<n> skip the
                         first n samples; d, g, l, o, I, q, Z accepted with a
                         note.
                         Without it, perf script's default: calls and errors
                         (ce, with p, x, w). A period in time is perf's:
                         rounded down to a power of two of TSC ticks, on the
                         clock of the last timestamp plus a tick an instruction.
  -F, --fields <list>    perf script's fields: comm, tid, pid, time, cpu,
                         event, period, flags, callindent, ip, sym, symoff,
                         dso, addr, insnlen, insn (the bytes, as perf without
                         --xed), srcline (file:line below the sample, from
                         DWARF by addr2line or llvm-symbolizer, as perf),
                         synth (others of perf's: accepted, not printed); +field/-field
                         change the defaults
                         (comm,tid,cpu,time,period,event,ip,sym,symoff,dso,
                         addr), hw:<list> sets those of the samples only.
                         Layout as perf script 6.1 prints it, byte for byte.
  --call-trace           --itrace=cewp -F -ip,-addr,-event,-period,+callindent
                         --ns, dsos padded to 50 columns (as perf).
  --call-ret-trace       the same with returns (crewp) and +flags.
  --ns                   times with 9 decimals (else perf's 6).
  -C, --cpu <list>       only these CPUs' streams (0,2-3).
  --pid, --tid <list>    only samples of these processes / threads.
  --comm <list>          only samples of threads of these names.
  --time <start>,<stop>  only between these perf times (seconds, either may be
                         empty), as --time-range.
  Unknown options are reported as perf does (exit status 129).
  Where ptkit and perf script differ (measured on a 5 M instruction perf.data):
  a branch's time can be one timing packet off (a psb line then comes before
  the branch instead of after) where ptkit's decoder reads a TNT packet ahead
  (0.6% of the --call-ret-trace lines, 1% of --itrace=be); insnlen is printed
  for instruction samples only; with CYC, ptkit's timestamps between timing
  packets are libipt's (an instruction sample's time, and so which instruction
  a period in time samples, can differ from perf's: i100us on that file gives
  62 samples to perf's 51); event names come from the file's event_desc,
  else perf's "unknown attr type: N"; an address with two symbols
  is named by ptkit's choice (perf: a non-weak one; labels only in .text).
  As perf, a branch's addr is shown by default, after -F changes only for
  -F +flags.
  Only Intel PT's samples are printed: SAMPLE records of other events in the
  file (cycles, ...) are not. An event without an IP of its own (pwre, pwrx, a
  ptwrite without FUP) shows the last IP the trace gave (a PSB's, an event's),
  where perf's decoder may have walked on.

analysis outputs (as ptkit flow writes them; any number at once):
  --timeline <file>      function-call timeline as Chrome trace-event JSON for
                         ui.perfetto.dev or chrome://tracing: a track per thread
                         (pid/tid from the sideband, named by its COMM; the idle
                         task and unknown threads get one per CPU), each frame
                         named by its function in the binaries loaded above
                         (kernel ones with --vmlinux/--kcore), times in ns by
                         the file's TSC conversion (MTC/CYC-exact between
                         branches); trace losses and decode errors end the
                         stacks (instant events of category "gap").
  --perfetto <file>      the same timeline in Perfetto's own protobuf format
                         (ui.perfetto.dev, trace_processor): about a third of
                         the JSON's size, opens at sizes the JSON cannot;
                         timestamps are perf time (ns, as perf script prints).
  --perf-time            --timeline's times in perf time too (else from the
                         trace's first TSC).
  --min-duration <d>     leave out of both timelines the calls shorter than d
                         (10us, 500ns, 2ms; a bare number is ns), and all they
                         called; --time-range cuts them in time.
  --timeline-summary     timelines that viewers open whatever the trace's size
                         (chrome://tracing: 256 MB of JSON, the Perfetto UI:
                         about 1 GB): the file is decoded twice, first to find
                         the shortest power-of-two duration whose longer calls
                         fit (240 MB JSON, 960 MB Perfetto), then the calls
                         shorter are left out (said on stderr); their count and
                         total per function are in the JSON's otherData.summary.
                         Without it, a timeline the perf.data's size makes too
                         large is said before writing.
  --timeline-budget <n>  --timeline-summary with this budget (bytes; 64K, 200M,
                         1G) for each timeline.
  --folded <file>        folded stacks for flame graphs (flamegraph.pl, inferno,
                         speedscope): thread name;outer;...;inner weight.
  --folded-weight insn|time
                         weigh folded stacks by instructions (default) or
                         time (ns).
  --coverage <file>      basic blocks and edges with execution counts, as JSON;
                         every transfer is an edge (branches taken and not,
                         returns, indirect and far ones, interrupts), none
                         across a gap: the block after one is reached from
                         nowhere. A block's symbol comes from the binaries
                         loaded (the kernel's, then each process's in the
                         order the sideband maps them).
  --afl-map <file>       the edges in AFL++'s QEMU-mode 64 KiB map (raw bytes;
                         see ptkit flow --help); counts stop at 255.
  --edges <file>         the edges as "0xFROM 0xTO COUNT" lines, sorted.
  --latency <file>       call durations per function as JSON: count, total,
                         nearest-rank p50/p90/p99, max, a log2 histogram, split
                         by caller; the slowest calls with their stacks; on-CPU
                         and off-CPU time from the switch records. Exact: every
                         call that returned (see ptkit latency --help).
  --stack-depth <n>      frames kept per call stack (default 4096; deeper ones
                         are counted, not named).
  They follow --cpu, --tid and --time-range. Printed output stays as without
  them; add -q to print only the summary.
  -j, --jobs <n>         threads to use (default: the cores available): with -q
                         and --timeline or --perfetto (not --latency, coverage
                         or a timeline summary), each CPU's trace is walked on a
                         thread of its own while this one writes, where there
                         are threads for all (n-1 CPUs' traces at most) and
                         each trace is 2 MiB or more (a thread costs smaller
                         ones more than it saves; $PTKIT_PERF_WALK_MIN sets
                         another size in bytes); the files are the same as
                         with --jobs 1.

results database:
  --db <file>            the tables of 'ptkit shard' (functions: calls, self and
                         total instructions and ns per function and thread;
                         edges; gaps) in a DuckDB database, for 'ptkit query'.
                         Not with --timeline, --perfetto, --folded, --jsonl or
                         --latency (run those separately).
  --db-calls             with --db: the calls table too, a row per call that
                         returned (function, caller, depth, start, duration).

examples:
  ptkit perf perf.data
  ptkit perf --symfs /srv/target --branches perf.data
  ptkit perf --calls --sym --vmlinux /boot/vmlinux-$(uname -r) perf.data
  ptkit perf --elf ./prog --cpu 2 --time-range 4711.000001,4711.5 perf.data
  perf record -o - -e intel_pt//u ./prog | ptkit perf --branches -
  ptkit perf -q --timeline calls.json --folded stacks.folded perf.data
  ptkit perf -q --timeline calls.json --latency latency.json perf.data
  ptkit perf -q --db results.duckdb perf.data
  ptkit perf --itrace=cr -F tid,ip,sym,symoff,addr,flags -i perf.data
  ptkit perf --call-trace --pid 1234 --time 4711.2,4711.5
  ptkit perf -q --vmlinux vmlinux --folded t.folded --folded-weight time \\
             perf.data
`;
