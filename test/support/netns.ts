/**
 * The loopback-only network namespace that scouting and pico tests run in.
 *
 * Test files named `*.netns.test.ts` are run by `scripts/run-tests.mjs` through
 * `scripts/in-netns.sh`: a new network namespace (`unshare -n`) with `lo` up, multicast on and
 * `224.0.0.0/4` routed to `lo` from 127.0.0.1. The test process and every server or program it
 * starts share it, so zenoh scouting's multicast reaches listeners on loopback and never leaves
 * the machine. Run alone, such a file re-executes nothing: it checks where it is, and its tests
 * skip (or, under CI, fail) outside a loopback-only namespace.
 */
import { readFileSync } from "node:fs";
import { repoPath } from "./repo.js";

/** The script that runs a command inside a fresh loopback-only namespace (exit 77: not permitted). */
export const IN_NETNS = repoPath("scripts", "in-netns.sh");

/** True under CI (`CI=true`), where what a test needs must be there: missing is a failure, not a skip. */
export const UNDER_CI = process.env.CI === "true";

/**
 * The network interfaces of this process's namespace. Read from /proc/net/dev, which shows the
 * reader's own namespace (/sys/class/net shows the one sysfs was mounted in).
 */
export function interfaces(): string[] {
  return readFileSync("/proc/net/dev", "utf8")
    .split("\n")
    .slice(2)
    .map((line) => line.split(":")[0]!.trim())
    .filter((name) => name !== "");
}

/** True when the only network interface here is `lo`: nothing sent can leave the machine. */
export function loopbackOnly(): boolean {
  const names = interfaces();
  return names.length === 1 && names[0] === "lo";
}

/**
 * Throws unless this process runs in a loopback-only namespace. Called before anything that
 * scouts or runs a pico program, so that no test sends multicast onto a real network.
 */
export function assertLoopbackOnly(what: string): void {
  if (!loopbackOnly()) {
    throw new Error(
      `${what} runs only inside a loopback-only network namespace (interfaces here: ${interfaces().join(", ")}); ` +
        "name the test file *.netns.test.ts, or run it through scripts/in-netns.sh",
    );
  }
}

/**
 * The `skip` option for a test that needs the namespace: a one-line reason outside it, or
 * `false` inside. Under CI it is always `false`, so that a test run outside the namespace fails
 * (through `assertLoopbackOnly`) instead of passing silently.
 */
export function netnsSkip(): string | false {
  if (UNDER_CI || loopbackOnly()) return false;
  return "needs a loopback-only network namespace (run through scripts/run-tests.mjs as root)";
}
