/**
 * Runs asynchronous tasks keyed by a string: the tasks of one key one after the other, in the
 * order they were added; tasks of different keys concurrently, at most `limit` at once, the
 * others waiting their turn in arrival order. What the `jetstream` volume pipelines its writes
 * with: writes to different keys overlap, a write to a key starts only once the previous write
 * to that key settled (so it decides on what that one left), and the number in flight is bounded.
 */
export class KeyedPipeline {
  /** Tasks that may run at once. */
  readonly limit: number;
  /** Keys with a task running or ready, each with the tasks queued behind it (null: none). */
  private readonly keys = new Map<string, Job[] | null>();
  /** Tasks free to run (their key's turn came) while `limit` were running. */
  private readonly ready: Job[] = [];
  private active = 0;
  private highest = 0;

  /** `limit`: the most tasks running at once (a positive integer). */
  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer, not ${limit}`);
    this.limit = limit;
  }

  /** Tasks running now. */
  get running(): number {
    return this.active;
  }

  /** The most tasks that ever ran at once (never above `limit`). */
  get peak(): number {
    return this.highest;
  }

  /** Tasks added and not yet started. */
  get waiting(): number {
    let n = this.ready.length;
    for (const q of this.keys.values()) n += q?.length ?? 0;
    return n;
  }

  /** Runs `task` in `key`'s turn and within the limit; settles as the task does. */
  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const job: Job = { key, task, resolve: resolve as (v: unknown) => void, reject };
      if (this.keys.has(key)) {
        const queued = this.keys.get(key);
        if (queued) queued.push(job);
        else this.keys.set(key, [job]);
      } else {
        this.keys.set(key, null);
        if (this.active < this.limit) this.start(job);
        else this.ready.push(job);
      }
    });
  }

  private start(job: Job): void {
    this.active++;
    if (this.active > this.highest) this.highest = this.active;
    let p: Promise<unknown>;
    try {
      p = job.task();
    } catch (err) {
      p = Promise.reject(err);
    }
    p.then(
      (v) => {
        this.done(job.key);
        job.resolve(v);
      },
      (err: unknown) => {
        this.done(job.key);
        job.reject(err);
      },
    );
  }

  /** A task of `key` settled: the key's next task becomes ready, and ready tasks fill the free slots. */
  private done(key: string): void {
    this.active--;
    const queued = this.keys.get(key);
    const next = queued?.shift();
    if (next) {
      if (queued!.length === 0) this.keys.set(key, null);
      this.ready.push(next);
    } else {
      this.keys.delete(key);
    }
    while (this.active < this.limit && this.ready.length > 0) this.start(this.ready.shift()!);
  }
}

interface Job {
  readonly key: string;
  readonly task: () => Promise<unknown>;
  readonly resolve: (v: unknown) => void;
  readonly reject: (err: unknown) => void;
}
