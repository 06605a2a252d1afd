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
  kind: "read" | "cas" | "create" | "cdelete";
  key: string;
  /** The value written, or the value read ("" for absent). */
  value: string;
  /** The value a cas or cdelete expects. */
  expect: string;
  /** ok: applied (or read); fail: answered 412; unknown: no answer or another error. */
  status: "ok" | "fail" | "unknown";
  /** Nanoseconds since the history began. */
  call: number;
  return: number;
}

const TEXT = { "content-type": "text/plain" };
/** A request without an answer by then is unknown. */
const REQUEST_TIMEOUT_MS = 8_000;

/** Options of `recordHistory`. */
export interface HistoryOptions {
  /** The URL of router `i` now (a restarted router has a new one). */
  readonly url: (router: number) => string;
  readonly routers: number;
  readonly clientsPerRouter: number;
  readonly keys: readonly string[];
  readonly durationMs: number;
  /** A seeded generator of 32-bit integers (`rng` of test/support/rng.ts), so a history replays its choices. */
  readonly draw: () => number;
}

/** Runs the clients for `durationMs` and returns their history. */
export async function recordHistory(o: HistoryOptions): Promise<Recorded[]> {
  const history: Recorded[] = [];
  const t0 = process.hrtime.bigint();
  const now = (): number => Number(process.hrtime.bigint() - t0);
  const end = Date.now() + o.durationMs;
  const client = async (id: number, router: number): Promise<void> => {
    /** What this client last read or wrote on each key: the value ("" absent), and the ETag to expect it with. */
    const seen = new Map<string, { value: string; etag: string }>();
    let n = 0;
    while (Date.now() < end) {
      const key = o.keys[o.draw() % o.keys.length]!;
      const last = seen.get(key);
      const roll = o.draw() / 2 ** 32;
      const value = `c${id}n${n++}`;
      const base = o.url(router);
      const op: Recorded = {
        client: id,
        kind: "read",
        key,
        value: "",
        expect: "",
        status: "unknown",
        call: 0,
        return: 0,
      };
      let headers: Record<string, string> | undefined;
      let method = "GET";
      // What a counter or a lock does: read, then write on what was read (an absent key: create).
      if (!last || (last.value !== "" && roll < 0.05)) {
        op.kind = "read";
      } else if (last.value === "") {
        op.kind = "create";
        op.value = value;
        method = "PUT";
        headers = { ...TEXT, "if-none-match": "*" };
      } else if (roll < 0.9) {
        op.kind = "cas";
        op.value = value;
        op.expect = last.value;
        method = "PUT";
        headers = { ...TEXT, "if-match": last.etag };
      } else {
        op.kind = "cdelete";
        op.expect = last.value;
        method = "DELETE";
        headers = { "if-match": last.etag };
      }
      op.call = now();
      try {
        const res = await fetch(`${base}/${key}`, {
          method,
          headers,
          body: method === "PUT" ? op.value : undefined,
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const text = await res.text();
        op.return = now();
        const etag = res.headers.get("etag");
        if (op.kind === "read") {
          if (res.status === 200) {
            const entries = JSON.parse(text) as Array<{ value: unknown }>;
            op.value = entries.length === 0 ? "" : String(entries[0]!.value);
            op.status = "ok";
            if (op.value === "") seen.set(key, { value: "", etag: "" });
            else if (etag) seen.set(key, { value: op.value, etag });
            else seen.delete(key);
          }
        } else if (res.status === 200) {
          op.status = "ok";
          if (op.kind === "cdelete") seen.set(key, { value: "", etag: "" });
          else if (etag) seen.set(key, { value: op.value, etag });
          else seen.delete(key);
        } else if (res.status === 412) {
          op.status = "fail";
          seen.delete(key);
        }
      } catch (err) {
        op.return = now();
        // A router down refuses the connection: nothing was sent, so nothing happened.
        if ((err as { cause?: { code?: string } }).cause?.code === "ECONNREFUSED") {
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        // No answer: unknown.
      }
      history.push(op);
    }
  };
  await Promise.all(Array.from({ length: o.routers * o.clientsPerRouter }, (_, i) => client(i, i % o.routers)));
  return history;
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
  let parsed: { result: Verdict["result"]; operations: number; keys: number };
  try {
    parsed = JSON.parse(line);
  } catch {
    throw new Error(`the checker answered no verdict (exit ${r.status}): ${r.error ?? ""}${r.stderr}${r.stdout}`);
  }
  return { ...parsed, file };
}
