/**
 * Query deadlines on one shared timer. A `setTimeout` per query costs a timer-list insert and
 * removal on every GET; most queries finish in microseconds, so one coarse ticking timer,
 * running only while something waits, is much cheaper. Deadlines fire up to `TICK_MS` late.
 */
import { performance } from "node:perf_hooks";
const TICK_MS = 20;

/** A registered deadline; pass it to `cancel` once the work finished in time. */
export interface Deadline {
  readonly at: number;
  readonly onExpire: () => void;
}

const pending = new Set<Deadline>();
let timer: NodeJS.Timeout | undefined;

function tick(): void {
  const now = performance.now();
  for (const d of pending) {
    if (d.at <= now) {
      pending.delete(d);
      d.onExpire();
    }
  }
  if (pending.size === 0 && timer) {
    clearInterval(timer);
    timer = undefined;
  }
}

/** Calls `onExpire` about `ms` milliseconds from now, unless cancelled first. */
export function schedule(ms: number, onExpire: () => void): Deadline {
  const d: Deadline = { at: performance.now() + ms, onExpire };
  pending.add(d);
  if (!timer) {
    // Kept referenced: a query waiting for its deadline must keep the process alive until it
    // answers, and the ticker stops as soon as nothing waits.
    timer = setInterval(tick, TICK_MS);
  }
  return d;
}

/** Forgets a deadline. */
export function cancel(d: Deadline): void {
  pending.delete(d);
}
