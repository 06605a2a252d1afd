/**
 * Jepsen-style histories: clients on several routers run random reads and conditional writes
 * (If-Match, If-None-Match: *, conditional DELETE) on a few keys over real HTTP, and record each
 * operation with its call and return times; the Go program in `checker/` checks the history for
 * linearizability with Porcupine (docs/conditional-writes.md, "Across routers").
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { repoPath } from "../support/repo.js";

/** One operation as the checker reads it (see checker/main.go). */
export interface Recorded {
  client: number;
  kind: "read" | "cas" | "create" | "cdelete" | "put" | "delete";
  key: string;
  /** The value written, or the value read ("" for absent). */
  value: string;
  /** The value a cas or cdelete expects. */
  expect: string;
  /** A put's lifetime (`?_ttl=<ms>ms`); 0 for none. */
  ttl: number;
  /** ok: applied (or read); fail: answered 412; unknown: no answer or another error. */
  status: "ok" | "fail" | "unknown";
  /** Nanoseconds since the history began. */
  call: number;
  return: number;
  /** False when no answer came at all (a timeout): the router may still apply it later. */
  answered: boolean;
}

const TEXT = { "content-type": "text/plain" };
/** A request without an answer by then is unknown. */
const REQUEST_TIMEOUT_MS = 8_000;
/** Keys with a lifetime per storage: written rarely, so that their values live to expire. */
const TTL_KEYS = 3;

/**
 * The keys a history uses under one storage's prefix: `c` takes reads and conditional writes (a
 * counter, a lock); `p` plain puts, deletes and reads (last-writer-wins); `t<i>` puts with a
 * lifetime and reads. Kept apart because a plain write racing a conditional one on one key is
 * ordered by last-writer-wins, not linearized (docs/conditional-writes.md, "Limits").
 */
export function historyKeys(prefix: string): { conditional: string; plain: string; ttl: string[] } {
  return {
    conditional: `${prefix}/c`,
    plain: `${prefix}/p`,
    ttl: Array.from({ length: TTL_KEYS }, (_, i) => `${prefix}/t${i}`),
  };
}

/** Options of `recordHistory`. */
export interface HistoryOptions {
  /** The URL of router `i` now (a restarted router has a new one). */
  readonly url: (router: number) => string;
  readonly routers: number;
  readonly clientsPerRouter: number;
  /** One prefix per storage (`mem/<name>`, `cas/<name>`): see `historyKeys`. */
  readonly prefixes: readonly string[];
  readonly durationMs: number;
  /** A seeded generator of 32-bit integers (`rng` of test/support/rng.ts), so a history replays its choices. */
  readonly draw: () => number;
  /** `process.hrtime.bigint()` when the history began (default: now); `finalReads` takes the same. */
  readonly t0?: bigint;
}

/** What one request is: the op recorded, and how it is sent. */
interface Planned {
  op: Recorded;
  method: string;
  path: string;
  headers?: Record<string, string>;
}

/** Runs the clients for `durationMs` and returns their history. */
export async function recordHistory(o: HistoryOptions): Promise<Recorded[]> {
  const history: Recorded[] = [];
  const t0 = o.t0 ?? process.hrtime.bigint();
  const now = (): number => Number(process.hrtime.bigint() - t0);
  const end = Date.now() + o.durationMs;
  const families = o.prefixes.map(historyKeys);
  const client = async (id: number, router: number): Promise<void> => {
    /** What this client last read or wrote on each conditional key: the value ("" absent), and the ETag to expect it with. */
    const seen = new Map<string, { value: string; etag: string }>();
    let n = 0;
    while (Date.now() < end) {
      const keys = families[o.draw() % families.length]!;
      const family = o.draw() % 4;
      const value = `c${id}n${n++}`;
      const planned =
        family < 2
          ? planConditional(id, keys.conditional, value, seen, o.draw() / 2 ** 32)
          : family === 2
            ? planPlain(id, keys.plain, value, o.draw() / 2 ** 32)
            : planTtl(id, keys.ttl[o.draw() % keys.ttl.length]!, value, o.draw());
      const { op } = planned;
      op.call = now();
      try {
        const res = await fetch(`${o.url(router)}/${planned.path}`, {
          method: planned.method,
          headers: planned.headers,
          body: planned.method === "PUT" ? op.value : undefined,
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const text = await res.text();
        op.return = now();
        op.answered = true;
        settle(op, res.status, text, res.headers.get("etag"), seen);
      } catch (err) {
        op.return = now();
        // A router down refuses the connection: nothing was sent, so nothing happened.
        if ((err as { cause?: { code?: string } }).cause?.code === "ECONNREFUSED") {
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        // No answer: unknown, and it may still apply after the timeout.
        op.answered = (err as { name?: string }).name !== "TimeoutError";
      }
      // A write whose outcome is not known: read before writing again, as a counter's client
      // would (each write left unknown may take effect at any later time, which the checker
      // must try everywhere: retrying on the same ETag piled dozens of them up in one outage).
      if (op.status === "unknown" && op.kind !== "read") seen.delete(op.key);
      history.push(op);
    }
  };
  await Promise.all(Array.from({ length: o.routers * o.clientsPerRouter }, (_, i) => client(i, i % o.routers)));
  return history;
}

function blank(client: number, kind: Recorded["kind"], key: string): Recorded {
  return { client, kind, key, value: "", expect: "", ttl: 0, status: "unknown", call: 0, return: 0, answered: false };
}

/** What a counter or a lock does: read, then write on what was read (an absent key: create). */
function planConditional(
  id: number,
  key: string,
  value: string,
  seen: Map<string, { value: string; etag: string }>,
  roll: number,
): Planned {
  const last = seen.get(key);
  if (!last || (last.value !== "" && roll < 0.05)) return { op: blank(id, "read", key), method: "GET", path: key };
  if (last.value === "") {
    const op = { ...blank(id, "create", key), value };
    return { op, method: "PUT", path: key, headers: { ...TEXT, "if-none-match": "*" } };
  }
  if (roll < 0.9) {
    const op = { ...blank(id, "cas", key), value, expect: last.value };
    return { op, method: "PUT", path: key, headers: { ...TEXT, "if-match": last.etag } };
  }
  const op = { ...blank(id, "cdelete", key), expect: last.value };
  return { op, method: "DELETE", path: key, headers: { "if-match": last.etag } };
}

/** Last-writer-wins: plain puts, deletes and reads. */
function planPlain(id: number, key: string, value: string, roll: number): Planned {
  if (roll < 0.4) return { op: blank(id, "read", key), method: "GET", path: key };
  if (roll < 0.8) return { op: { ...blank(id, "put", key), value }, method: "PUT", path: key, headers: TEXT };
  return { op: blank(id, "delete", key), method: "DELETE", path: key };
}

/** Mostly reads; one in five a put that lives 100 to 1,000 ms. */
function planTtl(id: number, key: string, value: string, draw: number): Planned {
  if (draw % 5 !== 0) return { op: blank(id, "read", key), method: "GET", path: key };
  const ttl = 100 + (draw % 901);
  return {
    op: { ...blank(id, "put", key), value, ttl },
    method: "PUT",
    path: `${key}?_ttl=${ttl}ms`,
    headers: TEXT,
  };
}

/** Records a request's answer in `op` (and what a conditional client now knows of the key in `seen`). */
function settle(
  op: Recorded,
  status: number,
  text: string,
  etag: string | null,
  seen: Map<string, { value: string; etag: string }>,
): void {
  const key = op.key;
  if (op.kind === "read") {
    if (status !== 200) return;
    const entries = JSON.parse(text) as Array<{ value: unknown }>;
    op.value = entries.length === 0 ? "" : String(entries[0]!.value);
    op.status = "ok";
    if (op.value === "") seen.set(key, { value: "", etag: "" });
    else if (etag) seen.set(key, { value: op.value, etag });
    else seen.delete(key);
  } else if (status === 200) {
    op.status = "ok";
    if (op.kind === "put" || op.kind === "delete") return;
    if (op.kind === "cdelete") seen.set(key, { value: "", etag: "" });
    else if (etag) seen.set(key, { value: op.value, etag });
    else seen.delete(key);
  } else if (status === 412) {
    op.status = "fail";
    seen.delete(key);
  }
}

/**
 * Once the faults are over: waits (up to `timeoutMs`) until every router answers a read of each
 * key with 200 and the same value, and returns those last reads, one per router and key, to be
 * checked with the history (a replica that never converges leaves them different, or not 200).
 */
export async function finalReads(
  url: (router: number) => string,
  routers: number,
  prefixes: readonly string[],
  t0: bigint,
  timeoutMs = 20_000,
): Promise<{ reads: Recorded[]; converged: boolean }> {
  const keys = prefixes.flatMap((p) => {
    const k = historyKeys(p);
    return [k.conditional, k.plain, ...k.ttl];
  });
  const now = (): number => Number(process.hrtime.bigint() - t0);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reads: Recorded[] = [];
    for (const key of keys)
      for (let r = 0; r < routers; r++) {
        const op = blank(1_000 + r, "read", key);
        op.call = now();
        try {
          const res = await fetch(`${url(r)}/${key}`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
          const text = await res.text();
          op.return = now();
          op.answered = true;
          settle(op, res.status, text, null, new Map());
        } catch {
          op.return = now();
        }
        reads.push(op);
      }
    const agree = keys.every((key) => {
      const of = reads.filter((op) => op.key === key);
      return of.every((op) => op.status === "ok" && op.value === of[0]!.value);
    });
    if (agree || Date.now() >= deadline) return { reads, converged: agree };
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Builds the Porcupine checker (Go, pinned in checker/go.mod) into `dir` (ignored by git, as
 * every build output: `.test-build` for the tests, which the test runner empties first) and
 * returns its path; throws with Go's output when it cannot.
 */
export function buildChecker(dir = repoPath(".test-build")): string {
  const CHECKER = join(dir, "jepsen-checker");
  mkdirSync(dir, { recursive: true });
  // Go's own install directory when `go` is not on the PATH.
  const go = spawnSync("go", ["version"]).status === 0 ? "go" : "/usr/local/go/bin/go";
  const r = spawnSync(go, ["build", "-o", CHECKER, "."], {
    cwd: repoPath("test", "jepsen", "checker"),
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`cannot build the linearizability checker: ${r.error ?? ""}${r.stderr}`);
  return CHECKER;
}

/** The checker's verdict on a history. */
export interface Verdict {
  readonly result: "ok" | "illegal" | "unknown";
  readonly operations: number;
  readonly keys: number;
  /** The keys whose history is not linearizable, and those the checker could not decide in time. */
  readonly illegal: readonly string[];
  readonly unknown: readonly string[];
  /** Where the history (and, for a violation, its picture) was written. */
  readonly file: string;
}

/** Checks `history` with the checker built by `buildChecker`; keeps the history in `jepsen/<name>.json` beside it. */
export function check(checker: string, name: string, history: readonly Recorded[]): Verdict {
  const dir = join(dirname(checker), "jepsen");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(history));
  const r = spawnSync(checker, [file, join(dir, `${name}.html`)], { encoding: "utf8" });
  const line = (r.stdout ?? "").trim().split("\n").pop() ?? "";
  let parsed: Omit<Verdict, "file">;
  try {
    parsed = JSON.parse(line);
  } catch {
    throw new Error(`the checker answered no verdict (exit ${r.status}): ${r.error ?? ""}${r.stderr}${r.stdout}`);
  }
  return { ...parsed, file };
}
