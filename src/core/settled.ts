/**
 * The promise a write returns when every subscriber it reached (storages included) took it
 * synchronously: already resolved, and always this same object, so a caller that checks for it
 * can answer at once instead of waiting a microtask (the REST gateway's write path does).
 */
export const SETTLED: Promise<void> = Promise.resolve();
