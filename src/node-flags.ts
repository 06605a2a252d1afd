/**
 * The V8 flags the `zest` command runs with (its `#!` line and `npm start` spell them out; a test
 * checks they agree with this list, and the benchmarks and end-to-end tests start the router
 * with them too).
 *
 * `--max-semi-space-size=64` (MiB): a router allocates fast and briefly (every request's
 * objects, every entry of a wide answer), and with V8's default young generation a process may
 * settle into promoting half of what it allocates, so that each scavenge copies megabytes and a
 * GET of 100,000 keys takes twice the CPU it takes in another process running the same code. A
 * larger young generation lets those objects die young; it costs up to 128 MiB of address space
 * and about 30 MB more resident memory under load (README, "Performance").
 */
export const NODE_FLAGS: readonly string[] = ["--max-semi-space-size=64"];
