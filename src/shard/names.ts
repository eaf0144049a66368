/** Function names with their DSOs, interned: each distinct (function, DSO) gets an id 0, 1, 2, ... */
export class FunctionNames {
  private readonly ids = new Map<string, Map<string, number>>();
  /** Each id's (function, DSO). */
  readonly list: [string, string][] = [];

  id(name: string, dso: string): number {
    let byDso = this.ids.get(name);
    if (byDso === undefined) {
      byDso = new Map();
      this.ids.set(name, byDso);
    }
    let id = byDso.get(dso);
    if (id === undefined) {
      id = this.list.length;
      this.list.push([name, dso]);
      byDso.set(dso, id);
    }
    return id;
  }
}
