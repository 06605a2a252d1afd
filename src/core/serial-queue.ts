/**
 * Runs tasks one at a time, in the order they were added: each starts once the one before it
 * has settled (fulfilled or rejected), so each sees the state the previous one left. A task's
 * failure reaches its own caller only.
 */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  /** Runs `task` after every task added before it; resolves or rejects as `task` does. */
  run<T>(task: () => Promise<T> | T): Promise<T> {
    const run = this.tail.then(task);
    this.tail = run.catch(() => undefined);
    return run;
  }
}
