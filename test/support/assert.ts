import assert from "node:assert/strict";
import { type ErrorKind, ZestError } from "../../src/core/errors.js";

/**
 * Asserts that `p` (a promise, or a value that may be one) rejects with a ZestError of `kind`
 * whose message matches `pattern`.
 */
export async function rejectsWith(p: unknown, kind: ErrorKind, pattern: RegExp): Promise<void> {
  await assert.rejects(Promise.resolve(p), (err: unknown) => {
    assert.ok(err instanceof ZestError, `expected a ZestError, got ${String(err)}`);
    assert.equal(err.kind, kind, err.message);
    assert.match(err.message, pattern);
    return true;
  });
}

/** Retries `check` until it stops throwing; its last failure is thrown after `timeoutMs`. */
export async function untilPasses(check: () => Promise<void> | void, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
