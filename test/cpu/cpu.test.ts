/** CPU parsing and the errata table. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { cpuErrata, packetQuirks, parseCpu } from "../../src/cpu/index.js";
import { DecodeQuirk } from "../../src/packet/index.js";

test("cpu f/m[/s]", () => {
  assert.deepEqual(parseCpu("6/142"), { family: 6, model: 142, stepping: 0 });
  assert.deepEqual(parseCpu("0x6/0x8e/0xa"), { family: 6, model: 0x8e, stepping: 10 });
  for (const bad of ["6", "6/", "/1", "6/256", "6/1/2/3", "65536/1", "a/b"])
    assert.equal(parseCpu(bad), undefined, bad);
});

test("errata of known CPUs; unknown CPUs have none", () => {
  const skl = cpuErrata({ family: 6, model: 0x5e, stepping: 3 })!;
  assert.ok(skl.skd007 && skl.skl168 && skl.bdm70 && skl.skl014 && skl.skd022 && skl.skd010);
  assert.ok(!skl.skz84 && !skl.apl11 && !skl.bdm64);
  assert.deepEqual(
    Object.entries(cpuErrata({ family: 6, model: 0x3d, stepping: 0 })!)
      .filter(([, on]) => on)
      .map(([n]) => n),
    ["bdm70", "bdm64"],
  );
  assert.ok(cpuErrata({ family: 0x13, model: 1, stepping: 0 })!.skz84);
  assert.equal(cpuErrata({ family: 6, model: 1, stepping: 0 }), undefined);
  assert.equal(packetQuirks(skl), DecodeQuirk.Skd007);
  assert.equal(packetQuirks(cpuErrata({ family: 6, model: 0x55, stepping: 0 })!), DecodeQuirk.Skz84);
});
