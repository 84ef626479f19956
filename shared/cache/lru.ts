import { LRUCache } from 'lru-cache';

/**
 * A bounded least-recently-used map: {@link https://github.com/isaacs/node-lru-cache lru-cache}
 * (recency kept in a linked list over preallocated typed arrays: a hit moves no `Map` entry),
 * with hit, miss and eviction counts. Bounded by entry count and by a total weight (the caller's
 * unit, e.g. bytes; a weight is counted as a whole number of at least 1 when the weight bound is
 * finite); an entry heavier than the whole weight bound is not kept. Used for per-container
 * caches of immutable things (resources, token counts), where any entry stays correct forever
 * and only memory needs a bound.
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

  /**
   * @param maxEntries at most this many entries (a whole number ≥ 1)
   * @param maxWeight at most this total weight (default: unbounded)
   * @throws RangeError when a bound is not a whole number ≥ 1 (`maxWeight` may be infinite)
   */
  constructor(
    readonly maxEntries: number,
    readonly maxWeight: number = Number.POSITIVE_INFINITY,
  ) {
    if (!(Number.isInteger(maxEntries) && maxEntries >= 1))
      throw new RangeError('maxEntries must be a whole number of at least 1');
    this.weighted = Number.isFinite(maxWeight);
    if (this.weighted && !(maxWeight >= 1)) throw new RangeError('maxWeight must be at least 1');
    this.cache = new LRUCache<K, V>({
      max: maxEntries,
      ...(this.weighted ? { maxSize: Math.floor(maxWeight) } : {}),
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

  /** Stores `value` under `key` as the most recently used, evicting the least recently used past a bound. */
  set(key: K, value: V, weight = 0): void {
    if (!this.weighted) {
      this.cache.set(key, value);
      return;
    }
    if (weight > this.maxWeight) {
      this.cache.delete(key);
      return;
    }
    this.cache.set(key, value, { size: Math.max(1, Math.ceil(weight)) });
  }

  /** Removes every entry. */
  clear(): void {
    this.cache.clear();
  }
}
