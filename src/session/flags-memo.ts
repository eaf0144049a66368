/**
 * What a branch's flags string (call, return, jcc, tr end  syscall, ...) means to an
 * output — its bytes, which lines keep it — worked out once per string and asked for
 * at every branch line. A Map lookup a line cost about 50 ns (20 ms of `ptkit perf
 * --calls`' 400k lines on the bench perf.data, Node 20); eight slots, by the string's
 * length and second letter, answer most lines by one compare of strings that are
 * mostly the same constants (call and return, jcc and jmp fall in different slots).
 */
export class FlagsMemo<T> {
  private readonly keys: (string | undefined)[] = new Array(8).fill(undefined);
  private readonly values: (T | undefined)[] = new Array(8).fill(undefined);
  private readonly all = new Map<string, T>();

  constructor(private readonly make: (flags: string) => T) {}

  get(flags: string): T {
    // (A string shorter than two has NaN for its second letter: slot 0.)
    const slot = (flags.length + flags.charCodeAt(1)) & 7;
    if (this.keys[slot] === flags) return this.values[slot]!;
    let value = this.all.get(flags);
    if (value === undefined) {
      value = this.make(flags);
      this.all.set(flags, value);
    }
    this.keys[slot] = flags;
    this.values[slot] = value;
    return value;
  }
}
