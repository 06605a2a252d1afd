/**
 * Waiting in tests: `eventually` polls a condition until it holds. (`untilPasses`, in
 * support/assert.ts, retries an assertion instead.)
 */

/** Polls `fn` every 10 ms until it returns true; throws `timed out waiting for <what>` after `timeoutMs`. */
export async function eventually(
  fn: () => Promise<boolean> | boolean,
  timeoutMs = 5_000,
  what = "condition",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
