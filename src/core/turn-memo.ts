/**
 * What was computed for an object during the current task, forgotten at its microtask
 * checkpoint: the sample fanned out to many streams in one synchronous delivery is rendered
 * once.
 *
 * Not a `WeakMap`: V8's young-generation collector keeps a `WeakMap`'s values alive through a
 * collection even when their keys die, so a value per sample, cached at thousands of samples a
 * second, was copied and promoted at every collection, and those pauses were most of a streamed
 * sample's p99 (docs/sse.md). Here a value is unreachable once its task ends.
 */
export class TurnMemo<K extends object, V> {
  private lastKey: K | undefined;
  private lastValue: V | undefined;
  // Only when a delivery nests inside another (a subscriber that writes): most tasks never make it.
  private older: Map<K, V> | undefined;
  private scheduled = false;
  private readonly clear = (): void => {
    this.scheduled = false;
    this.lastKey = undefined;
    this.lastValue = undefined;
    this.older = undefined;
  };

  /** The value remembered for `key` in this task, if any. */
  get(key: K): V | undefined {
    if (key === this.lastKey) return this.lastValue;
    return this.older?.get(key);
  }

  /** Remembers `value` for `key` until the end of this task. */
  set(key: K, value: V): void {
    if (this.lastKey !== undefined && this.lastKey !== key) {
      this.older ??= new Map();
      this.older.set(this.lastKey, this.lastValue!);
    }
    this.lastKey = key;
    this.lastValue = value;
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(this.clear);
    }
  }
}
