import assert from "node:assert/strict";
import { ZestError } from "../../src/core/errors.js";

/** Asserts that `p` rejects with a ZestError of `status` whose message matches `pattern`. */
export async function rejectsWith(p: Promise<unknown>, status: number, pattern: RegExp): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof ZestError, `expected a ZestError, got ${String(err)}`);
    assert.equal(err.status, status, err.message);
    assert.match(err.message, pattern);
    return true;
  });
}
