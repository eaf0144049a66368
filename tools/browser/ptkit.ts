/**
 * The browser bundle's entry: every library layer under its own name, so that the
 * layers' exports cannot collide (`import { flow, image } from "./ptkit.js"`). The CLI
 * is not part of it: it is the only layer that uses Node's API.
 *
 * The isa layer loads iced-x86 on demand, which a browser can only do asynchronously:
 * the bundle does it before it hands out its exports, so that pages decode at once.
 */
import { initIsa } from "../../src/isa/index.js";

export * as analysis from "../../src/analysis/index.js";
export * as base from "../../src/base/index.js";
export * as cpu from "../../src/cpu/index.js";
export * as event from "../../src/event/index.js";
export * as flow from "../../src/flow/index.js";
export * as image from "../../src/image/index.js";
export * as isa from "../../src/isa/index.js";
export * as packet from "../../src/packet/index.js";
export * as perf from "../../src/perf/index.js";
export * as session from "../../src/session/index.js";
export * as shard from "../../src/shard/index.js";
export * as time from "../../src/time/index.js";
export * as unit from "../../src/unit/index.js";

await initIsa();
