/**
 * deploy/kubernetes/, checked as far as can be without a cluster or Docker: the Jobs
 * are what `ptkit shard` needs (an Indexed Job whose pods run `ptkit shard run` with
 * the index from JOB_COMPLETION_INDEX, then a Job running `ptkit shard merge` over the
 * same directory and plan), every manifest names the same image and volume, and the
 * Dockerfile's entrypoint is where `npm run build` puts the CLI bundle (this test runs
 * after a build) and runs only npm scripts that package.json has.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, posix } from "node:path";
import { test } from "node:test";
import { REPO_ROOT } from "../corpus.js";
import { parseYaml, type Yaml } from "./yaml-subset.js";

const DIR = join(REPO_ROOT, "deploy", "kubernetes");

type Obj = { [key: string]: Yaml };

function obj(v: Yaml | undefined, what: string): Obj {
  assert.ok(v !== null && typeof v === "object" && !Array.isArray(v), `${what} is not a mapping`);
  return v as Obj;
}
function list(v: Yaml | undefined, what: string): Yaml[] {
  assert.ok(Array.isArray(v), `${what} is not a list`);
  return v;
}
function str(v: Yaml | undefined, what: string): string {
  assert.equal(typeof v, "string", `${what} is not a string`);
  return v as string;
}
function int(v: Yaml | undefined, what: string): number {
  assert.ok(Number.isSafeInteger(v), `${what} is not an integer`);
  return v as number;
}

function manifest(name: string): Obj {
  return obj(parseYaml(readFileSync(join(DIR, name), "utf8")), name);
}

/** What a pod spec says, in the terms the tests compare. */
interface PodFacts {
  spec: Obj;
  image: string;
  args: string[] | undefined;
  command: Yaml | undefined;
  claim: string;
  mountPath: string;
  runAsUser: number;
}

/** A pod spec with one container that mounts one volume, a PersistentVolumeClaim. */
function podFacts(spec: Obj, what: string): PodFacts {
  const containers = list(spec.containers, `${what}: containers`);
  assert.equal(containers.length, 1, `${what}: one container`);
  const c = obj(containers[0], `${what}: the container`);
  const mounts = list(c.volumeMounts, `${what}: volumeMounts`);
  assert.equal(mounts.length, 1, `${what}: one volume mount`);
  const mount = obj(mounts[0], `${what}: the volume mount`);
  const volumes = list(spec.volumes, `${what}: volumes`).map((v) => obj(v, `${what}: a volume`));
  const volume = volumes.find((v) => v.name === mount.name);
  assert.ok(volume, `${what}: the mounted volume '${String(mount.name)}' is not in volumes`);
  const pvc = obj(volume.persistentVolumeClaim, `${what}: the volume's persistentVolumeClaim`);
  const args =
    c.args === undefined
      ? undefined
      : list(c.args, `${what}: args`).map((a, i) => str(a, `${what}: args[${i}]`));
  return {
    spec,
    image: str(c.image, `${what}: image`),
    args,
    command: c.command,
    claim: str(pvc.claimName, `${what}: claimName`),
    mountPath: str(mount.mountPath, `${what}: mountPath`),
    runAsUser: int(obj(spec.securityContext, `${what}: securityContext`).runAsUser, `${what}: runAsUser`),
  };
}

function job(name: string): { doc: Obj; spec: Obj; pod: PodFacts } {
  const doc = manifest(name);
  assert.equal(doc.apiVersion, "batch/v1", `${name}: apiVersion`);
  assert.equal(doc.kind, "Job", `${name}: kind`);
  const spec = obj(doc.spec, `${name}: spec`);
  const template = obj(spec.template, `${name}: spec.template`);
  const pod = podFacts(obj(template.spec, `${name}: the pod spec`), name);
  return { doc, spec, pod };
}

const shards = job("shard-job.yaml");
const merge = job("merge-job.yaml");
const shellDoc = manifest("shell-pod.yaml");
const shell = podFacts(obj(shellDoc.spec, "shell-pod.yaml: spec"), "shell-pod.yaml");
const volumeDoc = manifest("volume.yaml");

/** `ptkit shard run PLAN -o DIR`, as the CLI's synopsis has it. */
function runArgs(): { plan: string; out: string } {
  const a = shards.pod.args;
  assert.ok(a, "shard-job.yaml: no args");
  assert.deepEqual(a.slice(0, 2), ["shard", "run"]);
  assert.ok(!a.includes("--index"), "shard run must take its index from JOB_COMPLETION_INDEX");
  assert.equal(a.length, 5, `shard-job.yaml: args ${JSON.stringify(a)}`);
  assert.equal(a[3], "-o");
  return { plan: a[2]!, out: a[4]! };
}

/** `ptkit shard merge DIR --plan PLAN -o DB`. */
function mergeArgs(): { dir: string; plan: string; db: string } {
  const a = merge.pod.args;
  assert.ok(a, "merge-job.yaml: no args");
  assert.deepEqual(a.slice(0, 2), ["shard", "merge"]);
  assert.equal(a.length, 7, `merge-job.yaml: args ${JSON.stringify(a)}`);
  assert.equal(a[3], "--plan");
  assert.equal(a[5], "-o");
  return { dir: a[2]!, plan: a[4]!, db: a[6]! };
}

test("the shard job is an Indexed batch/v1 Job, retried per index, its pods never restarted in place", () => {
  const s = shards.spec;
  assert.equal(s.completionMode, "Indexed");
  assert.equal(shards.pod.spec.restartPolicy, "Never");
  const completions = int(s.completions, "completions");
  assert.ok(completions >= 1);
  const parallelism = int(s.parallelism, "parallelism");
  assert.ok(parallelism >= 1 && parallelism <= completions, "parallelism is 1..completions");
  assert.ok(int(s.backoffLimitPerIndex, "backoffLimitPerIndex") >= 0);
  const maxFailed = int(s.maxFailedIndexes, "maxFailedIndexes");
  assert.ok(maxFailed >= 0 && maxFailed <= completions, "maxFailedIndexes is at most completions");
  // The value to set from the plan is marked where it is set.
  const text = readFileSync(join(DIR, "shard-job.yaml"), "utf8");
  assert.match(text, /^\s*completions: \d+ +# = shards in plan\.json$/m);
});

test("the merge job is a plain batch/v1 Job whose pod is never restarted in place", () => {
  assert.equal(merge.spec.completionMode, undefined);
  assert.equal(merge.spec.completions, undefined);
  assert.equal(merge.pod.spec.restartPolicy, "Never");
});

test("the jobs run ptkit's commands as the CLI spells them, on the same plan and directory", () => {
  const run = runArgs();
  const m = mergeArgs();
  assert.equal(m.dir, run.out, "merge reads the directory that shard run writes");
  assert.equal(m.plan, run.plan, "merge checks the plan that shard run decodes");
  for (const p of [run.plan, run.out, m.db])
    assert.ok(p.startsWith(`${shards.pod.mountPath}/`), `${p} is on the volume`);
  assert.notEqual(posix.dirname(m.db), run.out, "the database is not among the shards' files");
  // No command: the image's entrypoint (ptkit) runs, and args are ptkit's arguments.
  assert.equal(shards.pod.command, undefined, "shard-job.yaml overrides the entrypoint");
  assert.equal(merge.pod.command, undefined, "merge-job.yaml overrides the entrypoint");
});

test("every manifest names the same image, volume claim, mount path and user", () => {
  for (const [name, pod] of [
    ["merge-job.yaml", merge.pod],
    ["shell-pod.yaml", shell],
  ] as const) {
    assert.equal(pod.image, shards.pod.image, `${name}: image`);
    assert.equal(pod.claim, shards.pod.claim, `${name}: claimName`);
    assert.equal(pod.mountPath, shards.pod.mountPath, `${name}: mountPath`);
    assert.equal(pod.runAsUser, shards.pod.runAsUser, `${name}: runAsUser`);
  }
  assert.equal(volumeDoc.kind, "PersistentVolumeClaim");
  const meta = obj(volumeDoc.metadata, "volume.yaml: metadata");
  assert.equal(meta.name, shards.pod.claim, "volume.yaml claims the volume the jobs mount");
  assert.ok(
    list(obj(volumeDoc.spec, "volume.yaml: spec").accessModes, "accessModes").includes("ReadWriteMany"),
    "pods on many nodes mount the volume at once",
  );
  assert.equal(shellDoc.kind, "Pod");
});

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
interface Instruction {
  stage: number;
  op: string;
  args: string;
}

function dockerfile(): { instructions: Instruction[]; stages: string[] } {
  const text = readFileSync(join(DIR, "Dockerfile"), "utf8");
  const instructions: Instruction[] = [];
  const stages: string[] = [];
  let pending = "";
  for (const raw of text.split("\n")) {
    if (/^\s*#/.test(raw)) continue;
    const line = raw.trimEnd();
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const whole = (pending + line).trim();
    pending = "";
    if (whole === "") continue;
    const m = /^(\S+)\s+(.*)$/.exec(whole);
    assert.ok(m, `Dockerfile: cannot read ${whole}`);
    const op = m[1]!.toUpperCase();
    if (op === "FROM") stages.push(/\bAS\s+(\S+)\s*$/i.exec(m[2]!)?.[1] ?? String(stages.length));
    assert.ok(stages.length > 0, `Dockerfile: ${op} before FROM`);
    instructions.push({ stage: stages.length - 1, op, args: m[2]!.trim() });
  }
  return { instructions, stages };
}

/** WORKDIR in force at each instruction of a stage (absolute paths only, as ours are). */
function withWorkdirs(ins: Instruction[], stage: number): { ins: Instruction; workdir: string }[] {
  let workdir = "/";
  return ins
    .filter((i) => i.stage === stage)
    .map((i) => {
      if (i.op === "WORKDIR") workdir = posix.resolve(workdir, i.args);
      return { ins: i, workdir };
    });
}

const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
  bin: Record<string, string>;
  scripts: Record<string, string>;
  engines: { node: string };
};

test("the Dockerfile's entrypoint is the bundle that npm run build makes", () => {
  const { instructions, stages } = dockerfile();
  const final = stages.length - 1;
  assert.ok(final >= 1, "a build stage and a runtime stage");
  const steps = withWorkdirs(instructions, final);
  const entry = steps.filter((s) => s.ins.op === "ENTRYPOINT");
  assert.equal(entry.length, 1, "one ENTRYPOINT in the runtime stage");
  const argv = JSON.parse(entry[0]!.ins.args) as string[];
  assert.equal(argv.length, 2);
  assert.equal(argv[0], "node");
  const cli = argv[1]!;
  assert.ok(posix.isAbsolute(cli), "the entrypoint's script is an absolute path");

  // The package (package.json) is copied to pkgDir; the script is the package's bin there.
  const pkgCopy = steps.find((s) => s.ins.op === "COPY" && /(^|\s)package\.json\s/.test(s.ins.args));
  assert.ok(pkgCopy, "the runtime stage copies package.json");
  const pkgDir = posix.resolve(pkgCopy.workdir, pkgCopy.ins.args.split(/\s+/).at(-1)!);
  const bin = pkg.bin.ptkit!;
  assert.equal(posix.relative(pkgDir, cli), bin, "the entrypoint is package.json's bin");
  assert.ok(existsSync(join(REPO_ROOT, bin)), `${bin} is missing: the test runs after npm run build`);

  // That directory comes from the build stage's own build output.
  const buildStage = stages.length - 2;
  const buildDir = withWorkdirs(instructions, buildStage).at(-1)!.workdir;
  const fromBuild = steps.filter(
    (s) => s.ins.op === "COPY" && s.ins.args.startsWith(`--from=${stages[buildStage]} `),
  );
  const copied = fromBuild.find((s) => {
    const [, src, dest] = s.ins.args.split(/\s+/);
    return (
      posix.resolve(s.workdir, dest!) === posix.dirname(cli) && src === posix.join(buildDir, dirname(bin))
    );
  });
  assert.ok(copied, `the runtime stage copies ${dirname(bin)} from the build stage to ${posix.dirname(cli)}`);
});

test("the Dockerfile runs only npm scripts that package.json has, and installs production dependencies itself", () => {
  const { instructions, stages } = dockerfile();
  const runs = instructions.filter((i) => i.op === "RUN");
  const scripts = runs.flatMap((r) =>
    [...r.args.matchAll(/\bnpm\s+run(?:-script)?\s+([^\s;&|]+)/g)].map((m) => m[1]!),
  );
  assert.ok(scripts.includes("build"), "the Dockerfile runs npm run build");
  for (const s of scripts) assert.ok(s in pkg.scripts, `npm run ${s}: package.json has no such script`);

  const installs = runs.flatMap((r) =>
    r.args
      .split(/&&|;|\|\|/)
      .map((c) => c.trim())
      .filter((c) => /^npm\s+(ci|install|i)\b/.test(c))
      .map((command) => ({ stage: r.stage, command })),
  );
  assert.ok(installs.length >= 2, "npm ci in the build stage and in the runtime stage");
  // A root lifecycle script would run the build (prepare) where no sources or no
  // dev dependencies are: every install skips them.
  if (["prepare", "preinstall", "install", "postinstall"].some((s) => s in pkg.scripts))
    for (const { command } of installs) assert.match(command, /--ignore-scripts\b/, command);
  const final = stages.length - 1;
  const runtime = installs.filter((i) => i.stage === final);
  assert.equal(runtime.length, 1, "the runtime stage runs npm ci once");
  assert.match(runtime[0]!.command, /^npm ci\b.*--omit=dev\b/);
  // Its node_modules, with DuckDB's native binding, is made for its own platform.
  const copiesModules = instructions.some(
    (i) => i.stage === final && i.op === "COPY" && /node_modules/.test(i.args),
  );
  assert.ok(!copiesModules, "the runtime stage copies a node_modules");
  const dockerignore = readFileSync(join(REPO_ROOT, ".dockerignore"), "utf8").split("\n");
  for (const entry of ["node_modules", "dist"])
    assert.ok(dockerignore.includes(entry), `.dockerignore lacks ${entry}`);
});

test("the image runs as the jobs' non-root user, in the volume's directory, on a supported Node", () => {
  const { instructions, stages } = dockerfile();
  const final = instructions.filter((i) => i.stage === stages.length - 1);
  const user = final.filter((i) => i.op === "USER").at(-1);
  assert.ok(user, "the runtime stage sets USER");
  const uid = user.args.split(":")[0]!;
  assert.match(uid, /^\d+$/, "a numeric user, which runAsNonRoot can check");
  assert.notEqual(Number(uid), 0);
  assert.equal(Number(uid), shards.pod.runAsUser, "the jobs' runAsUser is the image's user");
  assert.equal(final.filter((i) => i.op === "WORKDIR").at(-1)?.args, shards.pod.mountPath);
  const minNode = Number(/^>=\s*(\d+)/.exec(pkg.engines.node)?.[1]);
  for (const from of instructions.filter((i) => i.op === "FROM")) {
    const major = Number(/^node:(\d+)/.exec(from.args)?.[1]);
    assert.ok(major >= minNode, `${from.args}: package.json needs Node ${pkg.engines.node}`);
  }
});

test("the README's kubectl commands name the manifests' objects", () => {
  const readme = readFileSync(join(DIR, "README.md"), "utf8");
  const shardJob = str(obj(shards.doc.metadata, "metadata").name, "shard job name");
  const mergeJob = str(obj(merge.doc.metadata, "metadata").name, "merge job name");
  const shellPod = str(obj(shellDoc.metadata, "metadata").name, "shell pod name");
  assert.ok(readme.includes(`kubectl wait --for=condition=complete job/${shardJob} `));
  assert.ok(readme.includes(`kubectl get job ${shardJob} -o jsonpath='{.status.failedIndexes}'`));
  assert.ok(readme.includes(`kubectl wait --for=condition=complete job/${mergeJob} `));
  assert.ok(readme.includes(`kubectl exec ${shellPod} -- ptkit shard run `));
  const { plan, out } = runArgs();
  assert.ok(readme.includes(`ptkit shard run ${plan} --index 3 -o ${out}`), "re-running one shard");
});
