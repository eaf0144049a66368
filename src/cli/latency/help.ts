/** `ptkit latency --help`. */
export const LATENCY_HELP = `usage: ptkit latency [<options>] [<perf options>] <perf.data>
       ptkit latency [<options>] <flow options> --pt <trace>

How long each function's calls take, from every call in the trace (exact, not
sampled): per function the calls that returned, their total, p50, p90, p99 and
maximum duration, and frames that did not return (unwound, cut by a trace gap
or the end: incomplete, not measured); under each function its callers with the
same figures; then the slowest calls with their start, thread and whole stack.
When threads were switched out (a perf.data file with switch records), how
much of the calls' time was spent off the CPU.

The decode is ptkit perf's (a perf.data file) or ptkit flow's (a raw trace at
--pt, with its code from --elf/--raw): their options are taken as they are, and
what they would print (errors, warnings) goes to stderr. A call's duration is
its return's time minus its call's, in whole clock units as --timeline writes
them: each equals the call's slice in the timeline. Units: ns when the TSC
frequency is known (perf.data: always; flow: --nom-freq), else TSC ticks, else
instructions. Percentiles are nearest-rank: p90 is the shortest duration that
at least 90% of the calls do not exceed, always a measured one. A function that
calls itself has each of its frames counted.

options:
  --json                 print the report as JSON (the form --latency <file>
                         writes; schema ptkit-latency version 1).
  --top <n>              list the n slowest calls (default 20).
  --function <name>      only this function: its figures, callers and slowest
                         calls.
  -h, --help             this text.

ptkit perf and ptkit flow write the same JSON with --latency <file>, beside
their other analysis outputs.

examples:
  ptkit latency perf.data
  ptkit latency --symfs binaries --top 5 perf.data
  ptkit latency --function parse --json perf.data > parse.json
  ptkit latency --elf ./a.out --nom-freq 37 --pt trace.pt
`;
