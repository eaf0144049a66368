/**
 * The commands the `ptkit` executable runs from its first CommonJS bundle (see
 * launch.ts), each with the module of ptkit.ts's table that loads it: the long
 * decodes, whose code is much and hot. The build (tools/build/bundle-cli.ts) puts into
 * that bundle only these commands' modules, all initialised when it loads: a module a
 * bundle initialises on demand has its top-level bindings as `var`s, which V8 does not
 * fold into the code that reads them (tools/build/const-bindings.ts). The other
 * commands run from a second bundle of all of them, initialised on demand.
 */
export const BUNDLED_COMMANDS: Readonly<Record<string, string>> = {
  flow: "./flow/flow.js",
  latency: "./latency/latency.js",
  perf: "./perf/db.js",
};
