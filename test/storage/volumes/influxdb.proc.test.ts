import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { rejectsWith } from "../../support/assert.js";
import { silentLogger } from "../../../src/core/log.js";
import { Router } from "../../../src/core/router.js";
import { Session } from "../../../src/core/session.js";
import { Timestamp, unixNanosToNtp64 } from "../../../src/core/timestamp.js";
import type { StorageBackend, StoredEntry, Volume } from "../../../src/storage/backend.js";
import { StorageService } from "../../../src/storage/service.js";
import { InfluxBackend, influxdbDriver } from "../../../src/storage/volumes/influxdb.js";
import { at, BASE_NS, entry, keysOf, runStorageContract, SECOND, ts, values } from "../contract.js";
import { influxdSkipReason, startInfluxd, type InfluxdHandle } from "../../support/influxdb.js";
import { freePort } from "../../support/ports.js";
import { eventually } from "../../support/wait.js";

// On CI a missing influxd throws here, failing this file instead of skipping it.
const skip = influxdSkipReason();
if (skip) console.log(`# skipping influxdb volume tests: ${skip}`);

const ctx = { logger: silentLogger };

describe("influxdb volume", { skip }, () => {
  let influxd: InfluxdHandle;
  let volume: Volume;
  let n = 0;
  /** A storage on a fresh database. */
  const fresh = (options: Record<string, unknown> = {}): Promise<StorageBackend> =>
    volume.createStorage(`s${n++}`, "**", options);

  async function influxql(q: string, db?: string): Promise<unknown> {
    const params = new URLSearchParams({ q, ...(db && { db }) });
    const res = await fetch(`${influxd.url}/query`, { method: "POST", body: params });
    return res.json();
  }
  async function databases(): Promise<string> {
    return JSON.stringify(await influxql("SHOW DATABASES"));
  }
  /** `/write` requests the server has answered so far. */
  async function writeRequests(): Promise<number> {
    const stats = (await influxql("SHOW STATS FOR 'httpd'")) as {
      results: Array<{ series: Array<{ columns: string[]; values: number[][] }> }>;
    };
    const httpd = stats.results[0]!.series[0]!;
    return httpd.values[0]![httpd.columns.indexOf("writeReq")]!;
  }

  before(async () => {
    influxd = await startInfluxd();
    volume = await influxdbDriver.open("influxdb", { url: influxd.url, lib: "influxdb" }, ctx);
  });
  after(async () => {
    await volume?.close();
    await influxd?.stop();
  });

  runStorageContract({
    name: "influxdb",
    // One database per storage name (zest_<name>), so reopening a name reopens its data.
    open: (name, options = {}) => volume.createStorage(name, "**", options),
    badOptions: [
      { options: { db: "bad name" }, message: /`db`/ },
      { options: { create_db: "maybe" }, message: /`create_db`/ },
      { options: { on_dispose: "explode" }, message: /`on_dispose`/ },
      { options: { on_closure: "explode" }, message: /`on_closure`/ },
      { options: { on_dispose: "DropDB", on_closure: "drop_series" }, message: /disagree/ },
    ],
  });

  it("a delete removes the key's points up to its time", async () => {
    const s = await fresh();
    await s.put(entry("del/k", "1", 1));
    await s.put(entry("del/k", "2", 2));
    await s.put(entry("del/other", "x", 1));
    await s.delete("del/k", ts(5));
    assert.deepEqual(await s.query("del/k"), []);
    assert.deepEqual(keysOf(await s.query("del/**")), ["del/other"]);
    // The points are gone; the delete is remembered as a tombstone (for the tombstone TTL).
    const gone = await s.lookup("del/k");
    assert.deepEqual([gone?.deleted, gone?.timestamp.encode()], [true, ts(5).encode()]);
    // A point newer than the delete (it arrived first) is kept: last writer wins.
    await s.put(entry("late/k", "old", 1));
    await s.put(entry("late/k", "newer", 9));
    await s.delete("late/k", ts(5));
    assert.deepEqual(values(await s.query("late/k", { start: { ns: at(0), inclusive: true } })), ["newer"]);
  });

  it("samples of one key that share a nanosecond are all kept, with their exact timestamps", async () => {
    const s = await fresh();
    // NTP64 steps of 1 (~0.23 ns): all four round down to the same Unix nanosecond.
    const base = unixNanosToNtp64(at(1));
    const stamps = [0n, 1n, 2n, 3n].map((d) => new Timestamp(base + d, "AB"));
    assert.equal(new Set(stamps.map((t) => t.unixNanos)).size, 1, "the timestamps collide");
    const sample = (key: string, i: number): StoredEntry => ({
      key,
      payload: Buffer.from(`v${i}`),
      encoding: "text/plain",
      timestamp: stamps[i]!,
    });
    // One after the other (one /write each), and together (one /write for all).
    for (let i = 0; i < stamps.length; i++) await s.put(sample("ns/one", i));
    await Promise.all(stamps.map((_, i) => s.put(sample("ns/batch", i))));
    const range = { start: { ns: at(0), inclusive: true } };
    for (const key of ["ns/one", "ns/batch"]) {
      const all = await s.query(key, range);
      assert.deepEqual(values(all), ["v0", "v1", "v2", "v3"], key);
      assert.deepEqual(
        all.map((e) => e.timestamp.encode()),
        stamps.map((t) => t.encode()),
        key,
      );
      assert.deepEqual(values(await s.query(key)), ["v3"], `${key}: latest`);
    }
    // A delete newer than them all removes every one, though some sit a few ns after their time.
    await s.delete("ns/one", new Timestamp(base + 4n, "AB"));
    assert.deepEqual(await s.query("ns/one", range), []);
  });

  it("each key is a measurement", async () => {
    const s = await fresh();
    assert.ok(s instanceof InfluxBackend);
    for (const k of ["m/a", "m/b/c", "top"]) await s.put(entry(k, "v", 1));
    const shown = (await influxql("SHOW MEASUREMENTS", s.db)) as {
      results: Array<{ series: Array<{ values: string[][] }> }>;
    };
    assert.deepEqual(
      shown.results[0]!.series[0]!.values.map((row) => row[0]),
      ["m/a", "m/b/c", "top"],
    );
  });

  it("wildcard queries return the latest point of every intersecting key", async () => {
    const s = await fresh();
    await s.put(entry("w/a", "a1", 1));
    await s.put(entry("w/a", "a2", 2));
    await s.put(entry("w/b", "b1", 1));
    await s.put(entry("w/b/c", "c1", 1));
    await s.put(entry("w", "root", 1));
    await s.put(entry("wx/a", "no", 1));
    await s.put(entry("v/a", "va", 1));
    const map = (es: StoredEntry[]): Record<string, string> =>
      Object.fromEntries(es.map((e) => [e.key, e.payload.toString()]));
    assert.deepEqual(map(await s.query("w/*")), { "w/a": "a2", "w/b": "b1" });
    assert.deepEqual(map(await s.query("w/**")), { w: "root", "w/a": "a2", "w/b": "b1", "w/b/c": "c1" });
    assert.deepEqual(keysOf(await s.query("*/a")), ["v/a", "w/a", "wx/a"]);
    assert.deepEqual(keysOf(await s.query("**")), ["v/a", "w", "w/a", "w/b", "w/b/c", "wx/a"]);
    assert.deepEqual(values(await s.query("w/*", { start: { ns: at(0), inclusive: true } })).sort(), [
      "a1",
      "a2",
      "b1",
    ]);
  });

  it("queries over many keys are batched and return them all", async () => {
    const s = await fresh();
    const lines = Array.from({ length: 250 }, (_, i) => entry(`many/k${i}`, `v${i}`, 1));
    for (const e of lines) await s.put(e);
    const res = await s.query("many/*");
    assert.equal(res.length, 250);
    assert.deepEqual(new Set(values(res)), new Set(lines.map((e) => e.payload.toString())));
  });

  it("binary payloads, empty payloads, encodings and awkward keys round-trip", async () => {
    const s = await fresh();
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => 255 - i));
    await s.put(entry("odd/bin", bytes, 1, "application/octet-stream"));
    await s.put(entry("odd/empty", Buffer.alloc(0), 1, ""));
    await s.put(entry('odd/with space, comma and "quote"', "q", 1, 'text/x-"odd"'));
    assert.ok((await s.query("odd/bin"))[0]?.payload.equals(bytes));
    const [empty] = await s.query("odd/empty");
    assert.equal(empty?.payload.length, 0);
    assert.equal(empty?.encoding, "");
    const [q] = await s.query('odd/with space, comma and "quote"');
    assert.equal(q?.encoding, 'text/x-"odd"');
    assert.deepEqual(keysOf(await s.query("odd/*")), ["odd/bin", "odd/empty", 'odd/with space, comma and "quote"']);
    await rejectsWith(Promise.resolve(s.put(entry("odd/back\\slash", "x", 1))), "bad_input", /cannot store key/);
  });

  it("reads during writes to the same key never see a half-written point", async () => {
    const s = await fresh();
    const key = "torn/k";
    // Point i: payload, encoding and timestamp all name i, so a mixed or partial point shows.
    const point = (i: number): StoredEntry => ({
      key,
      payload: Buffer.from(`value ${i} `.repeat(1 + (i % 7))),
      encoding: `text/plain;n=${i}`,
      timestamp: new Timestamp(unixNanosToNtp64(BASE_NS + BigInt(i) * 1_000_000n), "AB"),
    });
    await s.put(point(0));
    const problems: string[] = [];
    const check = (es: StoredEntry[], what: string): void => {
      for (const e of es) {
        const m = /^text\/plain;n=(\d+)$/.exec(e.encoding);
        const want = m ? point(Number(m[1])) : undefined;
        if (
          !want ||
          e.key !== key ||
          !e.payload.equals(want.payload) ||
          e.timestamp.encode() !== want.timestamp.encode()
        ) {
          problems.push(
            `${what}: ${JSON.stringify({ key: e.key, payload: e.payload.toString(), encoding: e.encoding, timestamp: e.timestamp.encode() })}`,
          );
        }
      }
    };
    let next = 1;
    let writing = true;
    const writer = async (): Promise<void> => {
      while (writing) await s.put(point(next++));
    };
    let queries = 0;
    const reader = async (): Promise<void> => {
      while (writing) {
        const latest = await s.query(key);
        if (latest.length !== 1) problems.push(`latest: ${latest.length} entries`);
        check(latest, "latest");
        // A narrow range over the points being written now.
        check(
          await s.query(key, { start: { ns: point(Math.max(0, next - 20)).timestamp.unixNanos, inclusive: true } }),
          "range",
        );
        queries += 2;
      }
    };
    // Runs until there is enough traffic to tell (polled, not a fixed timer).
    const stop = eventually(() => next > 300 && queries > 60, 20_000, "enough concurrent traffic").finally(() => {
      writing = false;
    });
    await Promise.all([stop, ...Array.from({ length: 16 }, writer), ...Array.from({ length: 8 }, reader)]);
    assert.ok(next > 100 && queries > 20, `too little traffic to tell: ${next} puts, ${queries} queries`);
    assert.deepEqual(problems.slice(0, 5), [], `${problems.length} bad answers in ${queries} queries (${next} puts)`);
    // Every acknowledged put is there, whole.
    const all = await s.query(key, { start: { ns: BASE_NS - SECOND, inclusive: true } });
    check(all, "after");
    assert.equal(all.length, next);
  });

  it("points in the earlier layout (fields value, encoding, timestamp) are still read", async () => {
    const db = `legacy_${n++}`;
    const s = await volume.createStorage(db, "**", { db });
    const old = (key: string, value: string, i: number): string =>
      `${key} value="${Buffer.from(value).toString("base64")}",encoding="text/x-old",timestamp="${ts(i).encode()}" ${at(i)}`;
    // A point with some of its fields only (as a reader may see one being written) is skipped.
    const partial = `legacy/half timestamp="${ts(3).encode()}" ${at(3)}`;
    const res = await fetch(`${influxd.url}/write?db=${db}&precision=ns`, {
      method: "POST",
      body: [
        old("legacy/a", "a1", 1),
        old("legacy/a", "a2", 2),
        old("legacy/half", "h1", 1),
        old("legacy/b", "b1", 1),
        partial,
      ].join("\n"),
    });
    assert.equal(res.status, 204, await res.text());
    await s.put(entry("legacy/b", "b2", 2));
    const [a] = await s.query("legacy/a");
    assert.deepEqual([a?.payload.toString(), a?.encoding, a?.timestamp.encode()], ["a2", "text/x-old", ts(2).encode()]);
    assert.equal((await s.lookup("legacy/a"))?.timestamp.encode(), ts(2).encode());
    const map = (es: StoredEntry[]): Record<string, string> =>
      Object.fromEntries(es.map((e) => [e.key, `${e.payload.toString()} ${e.encoding}`]));
    assert.deepEqual(map(await s.query("legacy/*")), { "legacy/a": "a2 text/x-old", "legacy/b": "b2 text/plain" });
    assert.deepEqual(values(await s.query("legacy/b", { start: { ns: at(0), inclusive: true } })), ["b1", "b2"]);
    assert.deepEqual(values(await s.query("legacy/half", { start: { ns: at(0), inclusive: true } })), ["h1"]);
  });

  it("writes and deletes apply in call order, and a query sees the writes called before it", async () => {
    const s = await fresh();
    const calls = [
      s.put(entry("order/k", "1", 1)),
      s.put(entry("order/k", "2", 2)),
      s.delete("order/k", ts(2)),
      s.put(entry("order/k", "3", 3)),
    ];
    assert.deepEqual(values(await s.query("order/k", { start: { ns: at(0), inclusive: true } })), ["3"]);
    await Promise.all(calls);
    const put = s.put(entry("order/j", "j", 1));
    assert.deepEqual(values(await s.query("order/*")), ["j", "3"]);
    await put;
  });

  it("puts made together share one /write, and a failed one rejects exactly its puts with a 503", async () => {
    const s = await fresh();
    const many = Array.from({ length: 200 }, (_, i) => entry(`batch/k${i}`, `v${i}`, 1));
    const writesBefore = await writeRequests();
    await Promise.all(many.map((e) => s.put(e)));
    assert.equal((await writeRequests()) - writesBefore, 1);
    assert.equal((await s.query("batch/*")).length, 200);
    // A point InfluxDB refuses (its `sample` field is a number already) fails its batch.
    assert.ok(s instanceof InfluxBackend);
    const res = await fetch(`${influxd.url}/write?db=${s.db}&precision=ns`, {
      method: "POST",
      body: `batch/bad sample=1 ${at(1)}`,
    });
    assert.equal(res.status, 204);
    await s.put(entry("batch/first", "f", 1));
    const bad = Promise.resolve(s.put(entry("batch/bad", "x", 2)));
    const mate = Promise.resolve(s.put(entry("batch/mate", "m", 2)));
    await new Promise((resolve) => setImmediate(resolve)); // their /write is sent: the next put starts another
    const after = Promise.resolve(s.put(entry("batch/after", "a", 2))).then(() => "ok");
    await rejectsWith(bad, "unavailable", new RegExp(`^influxdb at ${influxd.url}: HTTP 400: .*field type conflict`));
    await rejectsWith(mate, "unavailable", /field type conflict/);
    assert.equal(await after, "ok", "a put in the next batch succeeds");
  });

  it("behind a storage service, puts made together share a /write, and a wildcard put sees them", async () => {
    const session = new Session(new Router({ zid: "0F" }));
    const backend = await fresh();
    const svc = new StorageService("ifx", "svc/**", backend, session, silentLogger);
    await svc.start({ align: false });
    try {
      const writesBefore = await writeRequests();
      await Promise.all(
        Array.from({ length: 100 }, (_, i) => session.put(`svc/k${i % 10}`, `v${i}`, { encoding: "text/plain" })),
      );
      const writes = (await writeRequests()) - writesBefore;
      assert.ok(writes < 10, `${writes} /write requests for 100 puts`);
      assert.equal((await backend.query("svc/**", { start: { ns: 0n, inclusive: true } })).length, 100);
      // Not awaited: the wildcard put, applied after it, must still find svc/new.
      const put = session.put("svc/new", "n");
      await session.put("svc/*", "all");
      await put;
      const latest = await backend.query("svc/*");
      assert.equal(latest.length, 11);
      assert.deepEqual(new Set(values(latest)), new Set(["all"]));
    } finally {
      await svc.stop(true);
    }
  });

  it("storages use their own database, zest_<name> by default, or `db`", async () => {
    const s = await volume.createStorage("my-store.1", "**", {});
    await s.put(entry("k", "v", 1));
    assert.match(await databases(), /"zest_my_store_1"/);
    const t = await volume.createStorage("named", "**", { db: "zenoh" });
    await t.put(entry("k", "v", 1));
    assert.match(await databases(), /"zenoh"/);
  });

  it("on_dispose DropDB drops the database; close without dispose keeps it", async () => {
    const kept = await volume.createStorage("kept", "**", { db: "kept_db", on_dispose: "DropDB" });
    await kept.put(entry("k", "v", 1));
    await kept.close(false);
    assert.match(await databases(), /"kept_db"/);
    const s = await volume.createStorage("dropped", "**", { db: "zenoh_dropped", on_dispose: "DropDB" });
    await s.put(entry("k", "v", 1));
    assert.match(await databases(), /"zenoh_dropped"/);
    await s.close(true);
    assert.doesNotMatch(await databases(), /"zenoh_dropped"/);
  });

  it("on_closure drop_series and on_dispose DropAllSeries empty the database but keep it", async () => {
    for (const opts of [{ on_closure: "drop_series" }, { on_dispose: "DropAllSeries" }, { on_dispose: "truncate" }]) {
      const db = `series_${n++}`;
      const s = await volume.createStorage(db, "**", { db, ...opts });
      await s.put(entry("a", "1", 1));
      await s.put(entry("b/c", "2", 1));
      await s.close(true);
      assert.match(await databases(), new RegExp(`"${db}"`));
      const again = await volume.createStorage(db, "**", { db });
      assert.deepEqual(await again.query("**"), [], JSON.stringify(opts));
    }
  });

  it("create_db false refuses a missing database", async () => {
    await rejectsWith(
      volume.createStorage("nodb", "**", { db: "does_not_exist", create_db: false }),
      "bad_input",
      /does_not_exist.*`create_db`/,
    );
    await rejectsWith(
      volume.createStorage("nodb", "**", { db: "does_not_exist", create_db: "false" }),
      "bad_input",
      /`create_db`/,
    );
    assert.doesNotMatch(await databases(), /does_not_exist/);
  });

  it("bad volume options are 400s that name the option", async () => {
    await rejectsWith(influxdbDriver.open("v", {}, ctx), "bad_input", /`url` of volume v is required/);
    await rejectsWith(influxdbDriver.open("v", { url: "ftp://x" }, ctx), "bad_input", /`url`/);
    await rejectsWith(influxdbDriver.open("v", { url: "not a url" }, ctx), "bad_input", /`url`/);
  });

  it("credentials may be given under `private`, and are sent as Basic auth", async () => {
    // auth-enabled is off on the test server, so any credentials pass; this checks they are accepted.
    const v = await influxdbDriver.open("priv", { url: influxd.url, private: { username: "u", password: "p" } }, ctx);
    const s = await v.createStorage("priv", "**", {});
    await s.put(entry("k", "v", 1));
    assert.deepEqual(values(await s.query("k")), ["v"]);
    assert.deepEqual(v.status(), { __required__: false, url: influxd.url });
    await rejectsWith(influxdbDriver.open("v", { url: influxd.url, private: "secret" }, ctx), "bad_input", /`private`/);
  });

  it("an unreachable server is a 503 naming the URL, quickly", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const started = Date.now();
    await rejectsWith(
      influxdbDriver.open("gone", { url }, ctx),
      "unavailable",
      new RegExp(`^influxdb at ${url} is unreachable: .*ECONNREFUSED`),
    );
    assert.ok(Date.now() - started < 6_000);
  });

  it("a server that stops answering fails a put with a 503 after 5 s", async () => {
    // Answers the volume's start-up requests, then never answers a /write.
    const hung = createServer((req, res) => {
      if (req.url === "/ping") res.writeHead(204).end();
      else if (req.url?.startsWith("/query"))
        res.end(
          JSON.stringify({
            results: [{ series: [{ name: "databases", columns: ["name"], values: [["zest_hung"]] }] }],
          }),
        );
    });
    await new Promise<void>((resolve) => hung.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(hung.address() as AddressInfo).port}`;
    try {
      const v = await influxdbDriver.open("hung", { url }, ctx);
      const s = await v.createStorage("hung", "**", {});
      const started = Date.now();
      await rejectsWith(
        Promise.resolve(s.put(entry("k", "v", 1))),
        "unavailable",
        new RegExp(`^influxdb at ${url}: no answer within 5 s`),
      );
      assert.ok(Date.now() - started < 7_000);
      await v.close();
    } finally {
      hung.closeAllConnections();
      await new Promise((resolve) => hung.close(resolve));
    }
  });

  it("a server that goes away makes puts and queries fail with a 503", async () => {
    const other = await startInfluxd();
    const v = await influxdbDriver.open("short-lived", { url: other.url }, ctx);
    const s = await v.createStorage("short", "**", {});
    await s.put(entry("k", "v", 1));
    await other.stop();
    await rejectsWith(
      Promise.resolve(s.put(entry("k", "v2", 2))),
      "unavailable",
      new RegExp(`^influxdb at ${other.url}: `),
    );
    await rejectsWith(s.query("**"), "unavailable", /influxdb at/);
  });
});
