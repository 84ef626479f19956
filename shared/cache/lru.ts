/**
 * A bounded least-recently-used map (a `Map` in recency order: a hit moves its entry to the end,
 * an insert past a bound evicts from the front). Bounded by entry count and by a total weight
 * (the caller's unit, e.g. bytes); an entry heavier than the whole weight bound is not kept.
 * Used for per-container caches of immutable things (resources, token counts), where any entry
 * stays correct forever and only memory needs a bound.
 */
export class LruCache<K, V> {
  private readonly entries = new Map<K, { value: V; weight: number }>();
  private total = 0;
  /** Lookups that found an entry / found none, since construction. */
  readonly stats = { hits: 0, misses: 0, evictions: 0 };

  /**
   * @param maxEntries at most this many entries (≥ 1)
   * @param maxWeight at most this total weight (default: unbounded)
   */
  constructor(
    readonly maxEntries: number,
    readonly maxWeight: number = Number.POSITIVE_INFINITY,
  ) {
    if (!(maxEntries >= 1)) throw new RangeError('maxEntries must be at least 1');
  }

  /** Number of entries held. */
  get size(): number {
    return this.entries.size;
  }

  /** Total weight held. */
  get weight(): number {
    return this.total;
  }

  /** The value of `key` (now the most recently used), or undefined. */
  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) {
      this.stats.misses++;
      return undefined;
    }
    this.stats.hits++;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Stores `value` under `key` as the most recently used, evicting the least recently used past a bound. */
  set(key: K, value: V, weight = 0): void {
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.total -= old.weight;
    }
    if (weight > this.maxWeight) return;
    this.entries.set(key, { value, weight });
    this.total += weight;
    while (this.entries.size > this.maxEntries || this.total > this.maxWeight) {
      const [oldest, entry] = this.entries.entries().next().value as [K, { value: V; weight: number }];
      this.entries.delete(oldest);
      this.total -= entry.weight;
      this.stats.evictions++;
    }
  }

  /** Removes every entry. */
  clear(): void {
    this.entries.clear();
    this.total = 0;
  }
}
