/**
 * C++ and Rust symbol demangling through gecko-profiler-demangle, the Firefox
 * profiler's WebAssembly build of the Rust crates cpp_demangle and rustc-demangle.
 *
 * The library layers cannot read files, so the caller brings the module's bytes
 * (`gecko-profiler-demangle/index_bg.wasm`):
 *
 * ```ts
 * // Browser: serve node_modules/gecko-profiler-demangle/index_bg.wasm (here as
 * // /index_bg.wasm) and compile it asynchronously.
 * const demangler = await Demangler.instantiate(await (await fetch("/index_bg.wasm")).arrayBuffer());
 * // Node: loadDemangler() in src/node/demangle-loader.ts reads the file and does
 * // Demangler.instantiateSync(bytes).
 * demangler.demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"); // std::vector<int, std::allocator<int> >::push_back(int const&)
 * const symbols = new Symbolizer({ demangler }); // hits name functions demangled
 * ```
 *
 * The glue keeps its instance in a module variable, so there is one instance per
 * JavaScript realm: the first instantiation wins and later calls return it. The glue
 * module (`gecko-profiler-demangle/index_bg.js`) is loaded when a demangler is first
 * made, not with this module: {@link Demangler.instantiate} imports it, and
 * {@link Demangler.instantiateSync} takes it from its caller (Node's loader requires
 * it), so a command that never demangles never loads it (the CLI's bundle, which
 * initialises its modules at start-up, took 5-10 ms less to run `ptkit perf --calls`
 * or `ptkit flow` on a small capture).
 */
import type * as GlueModule from "gecko-profiler-demangle/index_bg.js";

/** The wasm-bindgen glue of gecko-profiler-demangle: the module's own imports, and its calls. */
export type DemanglerGlue = typeof GlueModule;

/** The glue, once a demangler was made. */
let glue: DemanglerGlue | undefined;

/** The part of the WebAssembly API used here (the project's TypeScript lib has no DOM types). */
interface WasmApi {
  Module: new (bytes: ArrayBuffer | ArrayBufferView) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
  instantiate(
    bytes: ArrayBuffer | ArrayBufferView,
    imports: object,
  ): Promise<{ instance: { exports: Record<string, unknown> } }>;
}
const wasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** What the module imports: the glue module, under the name wasm-bindgen gave it. */
function imports(g: DemanglerGlue): object {
  return { "./index_bg.js": g };
}

/**
 * libiberty's wording (what c++filt, nm -C, objdump -C, gdb and perf print) for
 * cpp_demangle's special names; a clone suffix (` [clone .cold]`) may follow.
 */
const SPECIAL_NAMES: readonly [RegExp, string][] = [
  [/^\{vtable\((.*)\)\}((?: \[clone [^\]]*\])*)$/s, "vtable for $1$2"],
  [/^\{vtt\((.*)\)\}((?: \[clone [^\]]*\])*)$/s, "VTT for $1$2"],
  [
    /^\{virtual override thunk\(\{offset\(-?\d+\)\}, (.*)\)\}((?: \[clone [^\]]*\])*)$/s,
    "non-virtual thunk to $1$2",
  ],
  [
    /^\{virtual override thunk\(\{virtual offset\(-?\d+, -?\d+\)\}, (.*)\)\}((?: \[clone [^\]]*\])*)$/s,
    "virtual thunk to $1$2",
  ],
];

/** GCC's and Clang's name for an anonymous namespace, which libiberty spells out. */
const ANONYMOUS_NAMESPACE = /_GLOBAL_[._$]N\w*/g;

let shared: Demangler | undefined;

/** What symbol tables demangle names with: a {@link Demangler}, or a {@link LazyDemangler}. */
export interface NameDemangler {
  /** The demangled form of `name` (see {@link Demangler.demangle}); a name that is not mangled comes back as it is. */
  demangle(name: string): string;
}

/**
 * A {@link Demangler} loaded by `load` when a mangled name first needs it: a C program's
 * names never compile the WebAssembly module (half a megabyte). Should `load` fail, its
 * message goes to `onFail`, once, and names stay as they are linked.
 */
export class LazyDemangler implements NameDemangler {
  /** The demangler once loaded; null when loading failed; undefined before it is needed. */
  private loaded: NameDemangler | null | undefined = undefined;

  constructor(
    private readonly load: () => NameDemangler | string,
    private readonly onFail: (message: string) => void,
  ) {}

  demangle(name: string): string {
    if (!isMangled(name)) return name;
    if (this.loaded === undefined) {
      const d = this.load();
      this.loaded = typeof d === "string" ? null : d;
      if (typeof d === "string") this.onFail(d);
    }
    return this.loaded === null ? name : this.loaded.demangle(name);
  }
}

export class Demangler implements NameDemangler {
  private constructor() {}

  /**
   * Compile and instantiate the module's bytes (the way browsers require for large
   * modules), with the glue `withGlue` (default: imported now).
   */
  static async instantiate(
    wasm: ArrayBuffer | ArrayBufferView,
    withGlue?: DemanglerGlue,
  ): Promise<Demangler> {
    if (shared) return shared;
    const g = glue ?? withGlue ?? (await import("gecko-profiler-demangle/index_bg.js"));
    const { instance } = await wasmApi.instantiate(wasm, imports(g));
    return Demangler.start(instance.exports, g);
  }

  /**
   * Compile and instantiate synchronously (Node, workers; browsers refuse this on the
   * main thread), with the glue `withGlue` (`gecko-profiler-demangle/index_bg.js`, which
   * a synchronous caller loads: Node's `require`), needed unless a demangler was made.
   */
  static instantiateSync(wasm: ArrayBuffer | ArrayBufferView, withGlue?: DemanglerGlue): Demangler {
    if (shared) return shared;
    const g = glue ?? withGlue;
    if (g === undefined)
      throw new Error(
        "no glue module: pass gecko-profiler-demangle/index_bg.js, or use Demangler.instantiate",
      );
    const instance = new wasmApi.Instance(new wasmApi.Module(wasm), imports(g));
    return Demangler.start(instance.exports, g);
  }

  private static start(exports: Record<string, unknown>, g: DemanglerGlue): Demangler {
    if (shared) return shared;
    glue = g;
    g.__wbg_set_wasm(exports);
    const start = exports.__wbindgen_start;
    if (typeof start === "function") start();
    shared = new Demangler();
    return shared;
  }

  /**
   * The demangled form of a symbol name: Itanium C++ (`_Z...`, clone suffixes such as
   * `.cold` shown as `[clone .cold]`), Rust legacy (`_ZN...17h<hash>E`, shown without
   * the hash) and Rust v0 (`_R...`). A version or PLT suffix (`@@GLIBCXX_3.4`, `@plt`)
   * is kept as is, as c++filt keeps it. Anything else, malformed names included,
   * comes back unchanged.
   */
  demangle(name: string): string {
    if (!isMangled(name)) return name;
    const at = name.indexOf("@");
    const base = at < 0 ? name : name.slice(0, at);
    let out: string;
    try {
      out = glue!.demangle_any(base);
    } catch {
      return name; // a trap in the demangler: treat the name as not demangleable
    }
    // demangle_any also tries the name without its first underscore (Mach-O style);
    // a result that is just that means nothing was demangled.
    if (out === base || out === base.slice(1)) return name;
    return libibertyStyle(out) + (at < 0 ? "" : name.slice(at));
  }
}

/** cpp_demangle's output in libiberty's words where they differ only in wording. */
function libibertyStyle(out: string): string {
  if (out.startsWith("{")) {
    for (const [pattern, wording] of SPECIAL_NAMES) out = out.replace(pattern, wording);
  }
  if (out.includes("_GLOBAL_")) out = out.replace(ANONYMOUS_NAMESPACE, "(anonymous namespace)");
  // An empty template parameter pack: cpp_demangle leaves its separator (`Foo<int, >`).
  if (out.includes(", >")) out = out.replaceAll(", >", ">");
  return out;
}

/** Whether a name has the prefix of an Itanium C++ (`_Z`) or Rust v0 (`_R`) mangled name. */
export function isMangled(name: string): boolean {
  return name.length > 2 && name.charCodeAt(0) === 0x5f && (name[1] === "Z" || name[1] === "R");
}
