/**
 * `ptkit record`: the perf command line for each option (dry run), the no-Intel-PT
 * message and exit code (sysfs pointed at a temporary directory), perf missing, a
 * capability missing, and a recording with a stand-in perf.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { main } from "../../src/cli/ptkit.js";
import { nodeRecordEnv, type RecordEnv, runRecord } from "../../src/cli/record/record.js";
import { captureIo } from "../conformance/ptt.js";

const root = mkdtempSync(join(tmpdir(), "ptkit-record-"));
after(() => rmSync(root, { recursive: true, force: true }));

/** A sysfs with (or without) an intel_pt PMU and the given capabilities. */
function sysfs(name: string, caps?: Record<string, string>): string {
  const dir = join(root, name);
  const pmu = join(dir, "bus/event_source/devices/intel_pt");
  mkdirSync(join(dir, "bus/event_source/devices/msr"), { recursive: true });
  if (caps) {
    mkdirSync(join(pmu, "caps"), { recursive: true });
    writeFileSync(join(pmu, "type"), "8\n");
    for (const [cap, value] of Object.entries(caps)) writeFileSync(join(pmu, "caps", cap), `${value}\n`);
  }
  return dir;
}

const CPUINFO = join(root, "cpuinfo");
writeFileSync(CPUINFO, "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n");

/** An environment whose programs are recorded, not run; `perf` answers with `status`. */
function fakeEnv(dir: string, status: (argv: readonly string[]) => number | string = () => 0) {
  const spawned: (readonly string[])[] = [];
  const env: RecordEnv = {
    sysfs: dir,
    cpuinfo: CPUINFO,
    spawn: (argv) => {
      spawned.push(argv);
      return status(argv);
    },
  };
  return { env, spawned };
}

async function record(argv: string[], env?: RecordEnv) {
  const io = captureIo(root);
  const code = env ? runRecord(argv, io, env) : await main(["record", ...argv], io);
  return { code, out: io.out.join(""), err: io.err.join("") };
}

test("dry run: the perf command line for each option combination", async () => {
  const { env, spawned } = fakeEnv(sysfs("dry", {}));
  const cases: [string[], string][] = [
    [["--", "./prog", "a b"], "perf record -e intel_pt//u -o perf.data -- ./prog 'a b'"],
    [["-k", "--", "ls"], "perf record -e intel_pt//k -o perf.data -- ls"],
    [["-u", "-k", "--", "ls"], "perf record -e intel_pt// -o perf.data -- ls"],
    [["--timing", "off", "--", "ls"], "perf record -e intel_pt/tsc=0,mtc=0/u -o perf.data -- ls"],
    [["--timing", "coarse", "--", "ls"], "perf record -e intel_pt/tsc,mtc=0/u -o perf.data -- ls"],
    [["--timing", "fine", "--", "ls"], "perf record -e intel_pt/tsc,mtc,mtc_period=0/u -o perf.data -- ls"],
    [
      ["--timing", "cycle", "-k", "--", "ls"],
      "perf record -e intel_pt/tsc,mtc,mtc_period=0,cyc/k -o perf.data -- ls",
    ],
    [["-S", "--", "ls"], "perf record -e intel_pt//u --snapshot=e -m,4M -o perf.data -- ls"],
    [
      ["--snapshot", "--aux-size", "16M", "--", "ls"],
      "perf record -e intel_pt//u --snapshot=e -m,16M -o perf.data -- ls",
    ],
    [["--aux-size", "65536", "--", "ls"], "perf record -e intel_pt//u -m,65536 -o perf.data -- ls"],
    [["-p", "4242"], "perf record -e intel_pt//u -o perf.data -p 4242"],
    [
      ["-p", "4242", "--duration", "2.5", "-o", "x.data"],
      "perf record -e intel_pt//u -o x.data -p 4242 -- sleep 2.5",
    ],
    [
      ["-o", "my trace.data", "--perf", "/opt/perf", "--", "sh", "-c", "echo 'hi'"],
      "/opt/perf record -e intel_pt//u -o 'my trace.data' -- sh -c 'echo '\\''hi'\\'''",
    ],
  ];
  for (const [args, want] of cases) {
    const r = await record(["--dry-run", ...args], env);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, `${want}\n`, args.join(" "));
    assert.equal(r.err, "");
  }
  assert.deepEqual(spawned, []); // a dry run runs nothing
  // Options after `--` belong to the command.
  assert.equal(
    (await record(["-n", "--", "prog", "--timing", "x"], env)).out,
    "perf record -e intel_pt//u -o perf.data -- prog --timing x\n",
  );
});

test("no Intel PT: says what it checked and what to do, exits 2, runs nothing", async () => {
  const { env, spawned } = fakeEnv(sysfs("amd"));
  const r = await record(["--", "ls"], env);
  assert.equal(r.code, 2);
  assert.equal(r.out, "");
  assert.match(
    r.err,
    /^ptkit record: no Intel PT here: .*amd\/bus\/event_source\/devices\/intel_pt does not exist/,
  );
  assert.match(r.err, /this processor: AMD EPYC 7B13, AuthenticAMD/);
  assert.match(r.err, /Broadwell/);
  assert.match(r.err, /ptkit perf perf\.data/);
  assert.match(r.err, /ptkit simulate/);
  assert.deepEqual(spawned, []);
  // A dry run still prints the command, with a note.
  const dry = await record(["--dry-run", "--", "ls"], env);
  assert.equal(dry.code, 0);
  assert.equal(dry.out, "perf record -e intel_pt//u -o perf.data -- ls\n");
  assert.match(dry.err, /note: it would fail here: no Intel PT here/);
});

test("the real environment checks /sys (on a machine without Intel PT)", async (t) => {
  const env = nodeRecordEnv();
  if (env.sysfs !== "/sys") {
    t.skip("PTKIT_SYSFS is set");
    return;
  }
  const r = await record(["--dry-run", "--", "true"], env);
  assert.equal(r.code, 0);
  if (r.err === "") {
    t.skip("this machine has Intel PT");
    return;
  }
  assert.match(r.err, /no Intel PT here: \/sys\/bus\/event_source\/devices\/intel_pt does not exist/);
});

test("perf missing: says how to install it, exits 2", async () => {
  const dir = sysfs("pt", { mtc: "1", psb_cyc: "1" });
  const fake = fakeEnv(dir, () => "spawnSync perf ENOENT");
  const r = await record(["--", "ls"], fake.env);
  assert.equal(r.code, 2);
  assert.match(r.err, /cannot run perf \(spawnSync perf ENOENT\)/);
  assert.match(r.err, /linux-perf/);
  assert.deepEqual(fake.spawned, [["perf", "--version"]]);
  // And for real: a perf that does not exist.
  const real = await record(["--perf", join(root, "no-such-perf"), "--", "ls"], {
    ...nodeRecordEnv(),
    sysfs: dir,
  });
  assert.equal(real.code, 2);
  assert.match(real.err, /cannot run .*no-such-perf \(.*ENOENT/);
});

test("a timing preset the processor cannot do is refused, naming the capability", async () => {
  const { env, spawned } = fakeEnv(sysfs("old", { mtc: "0", psb_cyc: "0" }));
  const fine = await record(["--timing", "fine", "--", "ls"], env);
  assert.equal(fine.code, 2);
  assert.match(fine.err, /--timing fine needs MTC packets, .*caps\/mtc is 0\); try --timing coarse/);
  const cycle = await record(
    ["--timing", "cycle", "--", "ls"],
    fakeEnv(sysfs("nocyc", { mtc: "1", psb_cyc: "0" })).env,
  );
  assert.match(cycle.err, /--timing cycle needs CYC packets/);
  assert.equal(
    (await record(["--timing", "coarse", "--no-decode", "-o", "c.data", "--", "ls"], env)).code,
    1,
  ); // runs: no file written
  assert.equal(spawned.length, 2);
});

test("recording: runs perf with the command line, then stops (--no-decode) or decodes", async () => {
  const output = join(root, "out.data");
  const { env, spawned } = fakeEnv(sysfs("ok", { mtc: "1", psb_cyc: "1" }), (argv) => {
    if (argv[1] === "record") writeFileSync(output, "not really perf data");
    return 0;
  });
  const r = await record(["--no-decode", "-o", output, "--", "./prog", "x"], env);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(spawned, [
    ["perf", "--version"],
    ["perf", "record", "-e", "intel_pt//u", "-o", output, "--", "./prog", "x"],
  ]);
  assert.match(r.err, /^ptkit record: perf record -e intel_pt\/\/u -o /);
  // Decoding goes to ptkit perf, which reports the file is no perf.data.
  const d = await record(["-o", output, "--", "./prog"], env);
  assert.notEqual(d.code, 0);
  assert.match(d.err, /ptkit perf/);
});

test("perf record failing without output: exit 1 and the usual cause", async () => {
  const { env } = fakeEnv(sysfs("fail", {}), (argv) => (argv[1] === "record" ? 255 : 0));
  const r = await record(["-o", join(root, "never.data"), "--", "ls"], env);
  assert.equal(r.code, 1);
  assert.match(r.err, /perf record failed \(exit status 255\) and wrote no .*never\.data/);
  assert.match(r.err, /perf_event_paranoid/);
});

test("bad arguments name the problem", async () => {
  const { env } = fakeEnv(sysfs("args", {}));
  const cases: [string[], RegExp][] = [
    [[], /give a command after '--' or a process with --pid/],
    [["--"], /no command after '--'/],
    [["-p", "1", "--", "ls"], /give --pid or a command, not both/],
    [["--duration", "3", "--", "ls"], /--duration goes with --pid/],
    [["-p", "1", "--duration", "soon"], /--duration: want seconds, not soon/],
    [["-p", "x"], /--pid: not a process id: x/],
    [["--timing", "exact", "--", "ls"], /--timing: want off, coarse, fine, cycle, not exact/],
    [["--aux-size", "4X", "--", "ls"], /--aux-size: want a size like 4M or 65536, not 4X/],
    [["prog"], /unexpected 'prog': put the command after '--'/],
  ];
  for (const [args, want] of cases) {
    const r = await record(args, env);
    assert.equal(r.code, 1, args.join(" "));
    assert.match(r.err, want);
    assert.match(r.err, /usage: ptkit record/);
  }
  const help = await record(["--help"], env);
  assert.equal(help.code, 0);
  assert.match(help.out, /examples:\n {2}ptkit record -- \.\/prog/);
});
