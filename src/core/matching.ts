/**
 * Matching status (Zenoh 1.x): whether a publisher's or querier's key expression currently
 * meets a subscriber or queryable, here or on another router. A listener is told each change.
 */
export interface MatchingListener {
  /** The current status. */
  readonly matching: boolean;
  /** Stops the listener (idempotent). */
  undeclare(): void;
}

/**
 * Recomputes `compute()` after each burst of declaration changes and calls `handler` when the
 * answer flips. `subscribe` registers for change notifications and returns the unsubscriber.
 */
export function watchMatching(
  compute: () => boolean,
  handler: (matching: boolean) => void,
  subscribe: (changed: () => void) => () => void,
): MatchingListener {
  let matching = compute();
  let scheduled = false;
  let closed = false;
  const recompute = (): void => {
    scheduled = false;
    if (closed) return;
    const now = compute();
    if (now === matching) return;
    matching = now;
    handler(now);
  };
  const unsubscribe = subscribe(() => {
    if (scheduled || closed) return;
    scheduled = true;
    queueMicrotask(recompute);
  });
  return {
    get matching() {
      return matching;
    },
    undeclare() {
      if (closed) return;
      closed = true;
      unsubscribe();
    },
  };
}
