import { LRUCache } from 'lru-cache';

/**
 * A bounded least-recently-used map: {@link https://github.com/isaacs/node-lru-cache lru-cache}
 * (recency kept in a linked list over preallocated typed arrays: a hit moves no `Map` entry),
 * with hit, miss and eviction counts. Bounded by entry count and by a total weight (the caller's
 * unit, e.g. bytes; with a weight bound each entry weighs its weight rounded up, and at least 1);
 * an entry heavier than the whole weight bound is not kept. lru-cache allocates its arrays for
 * `maxEntries` up front (about 23 bytes an entry: 4.6 MB for 200,000). Used for per-container
 * caches of immutable things (resources, token counts), where any entry stays correct forever
 * and only memory needs a bound; a value set again under its key keeps its first weight.
 *
 * Why not a `Map` moved to the end on each hit (`delete` + `set`, as before): at 57,000 resources
 * (a 10,000-task conversation) that cost 15–22 µs per hit in the running system — 0.3 ms per
 * task — against under 1 µs for a lookup that leaves the `Map` alone (issue 16).
 */
export class LruCache<K extends {}, V extends {}> {
  private readonly cache: LRUCache<K, V>;
  private readonly weighted: boolean;
  /** Lookups that found an entry / found none, and entries evicted by a bound, since construction. */
  readonly stats = { hits: 0, misses: 0, evictions: 0 };

  /** Largest `maxEntries` accepted (its arrays are allocated up front). */
  static readonly MAX_ENTRIES = 10_000_000;

  /**
   * @param maxEntries at most this many entries (a whole number from 1 to {@link MAX_ENTRIES})
   * @param maxWeight at most this total weight (a whole number ≥ 1; default: unbounded)
   * @throws RangeError when a bound is out of range or not a whole number
   */
  constructor(
    readonly maxEntries: number,
    readonly maxWeight: number = Number.POSITIVE_INFINITY,
  ) {
    if (!(Number.isInteger(maxEntries) && maxEntries >= 1 && maxEntries <= LruCache.MAX_ENTRIES))
      throw new RangeError(`maxEntries must be a whole number from 1 to ${LruCache.MAX_ENTRIES}`);
    this.weighted = maxWeight !== Number.POSITIVE_INFINITY;
    if (this.weighted && !(Number.isInteger(maxWeight) && maxWeight >= 1))
      throw new RangeError('maxWeight must be a whole number of at least 1, or Infinity');
    this.cache = new LRUCache<K, V>({
      max: maxEntries,
      ...(this.weighted ? { maxSize: maxWeight } : {}),
      dispose: (_value, _key, reason) => {
        if (reason === 'evict') this.stats.evictions++;
      },
    });
  }

  /** Number of entries held. */
  get size(): number {
    return this.cache.size;
  }

  /** Total weight held (0 when the weight is unbounded). */
  get weight(): number {
    return this.cache.calculatedSize;
  }

  /** The value of `key` (now the most recently used), or undefined. */
  get(key: K): V | undefined {
    const value = this.cache.get(key);
    if (value === undefined) this.stats.misses++;
    else this.stats.hits++;
    return value;
  }

  /**
   * Stores `value` under `key` as the most recently used, evicting the least recently used past a
   * bound. `weight` counts only with a weight bound: rounded up, at least 1; heavier than the
   * whole bound, the entry is not kept (and an earlier value of `key` is dropped).
   */
  set(key: K, value: V, weight = 0): void {
    if (!this.weighted) {
      this.cache.set(key, value);
      return;
    }
    const size = Math.max(1, Math.ceil(weight));
    if (size > this.maxWeight) {
      this.cache.delete(key);
      return;
    }
    this.cache.set(key, value, { size });
  }

  /** Removes every entry. */
  clear(): void {
    this.cache.clear();
  }
}
