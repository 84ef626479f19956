/**
 * A bounded memo for the results of a pure function (per process: a Lambda container keeps it
 * across invocations). Two generations of `Map`s: a lookup checks the young one, then the old
 * one (moving a hit there into the young one); when the young generation is full it becomes the
 * old one and the previous old one is dropped. So at most `2 × perGeneration` entries are held,
 * what was used in the last generation stays, and a lookup costs one or two `Map` gets, with no
 * reordering on a hit (cheaper than {@link LruCache} on hot paths where misses are cheap to
 * recompute). Only for values that never go stale: the result of a pure function of the key.
 */
export class GenerationalMemo<K, V> {
  private young = new Map<K, V>();
  private old = new Map<K, V>();
  /** Lookups that found an entry / found none, and entries dropped with an old generation. */
  readonly stats = { hits: 0, misses: 0, evictions: 0 };

  /** @param perGeneration entries per generation (≥ 1); at most twice this many are held */
  constructor(readonly perGeneration: number) {
    if (!(perGeneration >= 1)) throw new RangeError('perGeneration must be at least 1');
  }

  /** Number of entries held (both generations). */
  get size(): number {
    return this.young.size + this.old.size;
  }

  /** The remembered value of `key`, or undefined. */
  get(key: K): V | undefined {
    const value = this.young.get(key);
    if (value !== undefined) {
      this.stats.hits++;
      return value;
    }
    const aged = this.old.get(key);
    if (aged === undefined) {
      this.stats.misses++;
      return undefined;
    }
    this.stats.hits++;
    this.old.delete(key);
    this.set(key, aged);
    return aged;
  }

  /** Remembers `value` (not undefined) for `key`. */
  set(key: K, value: V): void {
    if (this.young.size >= this.perGeneration) {
      this.stats.evictions += this.old.size;
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, value);
  }

  /** Forgets everything. */
  clear(): void {
    this.young.clear();
    this.old.clear();
  }
}
