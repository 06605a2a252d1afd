/**
 * Time as the fabric's parts see it: the current time and one-shot timers. The real clock is
 * `systemClock`; `ManualClock` is moved by hand, so the acknowledgement, heartbeat and timeout
 * rules can be tested in milliseconds (see docs/fabric-protocol.md).
 */

/** A timer handle; cancel it with `Clock.clearTimeout`. */
export interface TimerHandle {
  readonly __timer: true;
}

/** The current time and one-shot timers. */
export interface Clock {
  /** Milliseconds since an arbitrary origin (only differences matter). */
  now(): number;
  /** Calls `fn` once after `ms` milliseconds; the timer never keeps the process alive. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle | undefined): void;
}

/** Wall-clock time and `setTimeout` (unref'd). */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return t as unknown as TimerHandle;
  },
  clearTimeout(handle) {
    if (handle !== undefined) clearTimeout(handle as unknown as NodeJS.Timeout);
  },
};

interface ManualTimer {
  readonly at: number;
  readonly order: number;
  readonly fn: () => void;
}

/** A clock that only moves when told to (`advance`): timers fire in time order, synchronously. */
export class ManualClock implements Clock {
  private time: number;
  private order = 0;
  private readonly timers = new Map<TimerHandle, ManualTimer>();

  constructor(start = 1_000_000) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const handle = { __timer: true } as const;
    this.timers.set(handle, { at: this.time + Math.max(0, ms), order: this.order++, fn });
    return handle;
  }

  clearTimeout(handle: TimerHandle | undefined): void {
    if (handle !== undefined) this.timers.delete(handle);
  }

  /** Timers not yet fired. */
  get pending(): number {
    return this.timers.size;
  }

  /** Moves time forward by `ms`, firing every timer that falls due (timers they set included). */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      let next: [TimerHandle, ManualTimer] | undefined;
      for (const entry of this.timers) {
        const t = entry[1];
        if (t.at > end) continue;
        if (!next || t.at < next[1].at || (t.at === next[1].at && t.order < next[1].order)) next = entry;
      }
      if (!next) break;
      this.timers.delete(next[0]);
      this.time = Math.max(this.time, next[1].at);
      next[1].fn();
    }
    this.time = end;
  }
}
