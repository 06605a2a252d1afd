import assert from "node:assert/strict";
import { type ErrorKind, ZestError } from "../../src/core/errors.js";

/** Asserts that `p` rejects with a ZestError of `kind` whose message matches `pattern`. */
export async function rejectsWith(p: Promise<unknown>, kind: ErrorKind, pattern: RegExp): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof ZestError, `expected a ZestError, got ${String(err)}`);
    assert.equal(err.kind, kind, err.message);
    assert.match(err.message, pattern);
    return true;
  });
}
