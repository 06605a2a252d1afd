/**
 * Resources for the tests of the enclosing `describe` (the part nats.js's `nst` plays for its
 * suites): started before them, stopped after them, and read inside them through a stand-in.
 */
import { after, before } from "node:test";

/**
 * A stand-in for the value `get` returns once it exists: each property read forwards to it
 * (methods bound to it), so a suite can hand out its resource before its `before` hook ran.
 */
export function forwarder<T extends object>(get: () => T | undefined, what: string): T {
  const target = (): T => {
    const t = get();
    if (t === undefined) throw new Error(`${what} has not started`);
    return t;
  };
  return new Proxy({} as T, {
    get(_, prop) {
      const t = target();
      const v = Reflect.get(t, prop, t) as unknown;
      return typeof v === "function" ? (v as (...args: unknown[]) => unknown).bind(t) : v;
    },
  });
}

/** `start` before the enclosing describe's tests, `stop` after them; the returned stand-in reads the started value. */
export function suiteResource<T extends object>(what: string, start: () => Promise<T> | T, stop: (t: T) => unknown): T {
  let started: T | undefined;
  before(async () => {
    started = await start();
  });
  after(async () => {
    if (started !== undefined) await stop(started);
  });
  return forwarder(() => started, what);
}
