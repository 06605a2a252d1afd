/**
 * A bounded map for caches on the request path. Eviction is by insertion order (the oldest entry
 * goes first), not by use: a hit costs one Map lookup and no reordering, and an entry still in
 * use is simply inserted again after it is evicted.
 */
export class BoundedCache<K, V> {
  readonly #map = new Map<K, V>();
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  get size(): number {
    return this.#map.size;
  }

  get(key: K): V | undefined {
    return this.#map.get(key);
  }

  set(key: K, value: V): void {
    if (!this.#map.has(key) && this.#map.size >= this.#max) this.#map.delete(this.#map.keys().next().value as K);
    this.#map.set(key, value);
  }

  delete(key: K): void {
    this.#map.delete(key);
  }
}
