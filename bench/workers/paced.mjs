// A fixed send schedule, shared by the fan-out benchmark (bench/suites/remote-fanout.ts) and the
// zenoh-ts worker (remote-client.mjs), which runs as plain JS in its own process.
import { setTimeout as sleep } from "node:timers/promises";

/**
 * Calls `send(seq)` for seq `first` to `first + count - 1` at `rate` per second: each 5 ms tick
 * sends the samples due by then, so a late tick catches up. A send that returns a promise is
 * awaited before the next. Resolves with the schedule's start (a `performance.now()` time).
 */
export async function paced(count, first, rate, send) {
  const start = performance.now() + 20;
  for (let i = 0; i < count; ) {
    const due = Math.min(count, Math.floor(((performance.now() - start) * rate) / 1000) + 1);
    while (i < due) {
      const sent = send(first + i++);
      // Only a promise is awaited: awaiting any other value (a push's length, a write's boolean)
      // would still cost a microtask per send.
      if (sent instanceof Promise) await sent;
    }
    await sleep(5);
  }
  return start;
}
