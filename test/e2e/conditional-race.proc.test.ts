/**
 * Concurrent conditional writers over real HTTP (docs/rest-gateway.md §A.4): exactly one wins, on
 * every volume kind (memory, SQLite, InfluxDB, JetStream) and across two routers sharing a
 * JetStream bucket. The atomicity is the storages' (docs/storage-contract.md); this checks it
 * end to end, through the REST headers.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { getJson, http, type HttpResult } from "../support/http.js";
import { influxdSkipReason, startInfluxd, type InfluxdHandle } from "../support/influxdb.js";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";
import { startZest, type ZestProcess } from "../support/zest-process.js";
import { NO_STORAGES, startRouters } from "../fabric/helpers.js";
import { eventually } from "../support/wait.js";

const TEXT = { "content-type": "text/plain" };
const WRITERS = 4;
const ROUNDS = 6;

const cfg = (path: string, value: unknown): string[] => ["--cfg", `${path}:${JSON.stringify(value)}`];
const storage = (name: string, keyExpr: string, volume: unknown): string[] =>
  cfg(`plugins/storage_manager/storages/${name}`, { key_expr: keyExpr, volume });

/** `WRITERS` conditional PUTs of `key` at once, writer `i` through `urls[i % urls.length]`; returns the responses in writer order. */
function race(
  urls: readonly string[],
  key: string,
  headers: Record<string, string>,
  round: number,
): Promise<HttpResult[]> {
  return Promise.all(
    Array.from({ length: WRITERS }, (_, i) =>
      http(urls[i % urls.length]!, "PUT", `/${key}`, { body: `r${round}w${i}`, headers: { ...TEXT, ...headers } }),
    ),
  );
}

/** Asserts exactly one writer won (200) and every other got a 412; returns the winner's index. */
function oneWinner(responses: HttpResult[], what: string): number {
  const statuses = responses.map((r) => r.status);
  const winners = statuses.flatMap((s, i) => (s === 200 ? [i] : []));
  assert.equal(
    winners.length,
    1,
    `${what}: exactly one writer wins, got ${JSON.stringify(statuses)} ${responses.map((r) => r.text.trim()).join(" | ")}`,
  );
  for (const r of responses)
    if (r.status !== 200) assert.equal(r.status, 412, `${what}: the others get 412, got ${r.status} ${r.text}`);
  return winners[0]!;
}

/** Races `WRITERS` writers with If-None-Match: * on a fresh key, then `ROUNDS` times with If-Match on the current ETag. */
async function raceOn(urls: readonly string[], prefix: string): Promise<void> {
  const [first] = urls as [string];
  const created = await race(urls, `${prefix}/fresh`, { "if-none-match": "*" }, 0);
  const w = oneWinner(created, `${prefix} If-None-Match: *`);
  assert.equal((await getJson(first, `/${prefix}/fresh`)).entries[0]?.value, `r0w${w}`);

  assert.equal((await http(first, "PUT", `/${prefix}/k`, { body: "start", headers: TEXT })).status, 200);
  for (let round = 1; round <= ROUNDS; round++) {
    const g = await http(first, "GET", `/${prefix}/k`);
    const etag = g.headers.get("etag");
    assert.ok(etag, `${prefix}: GET answers an ETag`);
    const responses = await race(urls, `${prefix}/k`, { "if-match": etag }, round);
    const winner = oneWinner(responses, `${prefix} If-Match round ${round}`);
    const after = await http(first, "GET", `/${prefix}/k`);
    assert.match(after.text, new RegExp(`"r${round}w${winner}"`), `${prefix}: the winner's value is stored`);
    assert.equal(
      after.headers.get("etag"),
      responses[winner]!.headers.get("etag"),
      `${prefix}: the winner's ETag is the key's`,
    );
  }
}

describe("concurrent conditional writers, one router, every volume", () => {
  const influxSkip = influxdSkipReason();
  if (influxSkip) console.log(`# skipping the InfluxDB race: ${influxSkip}`);
  let dir: string;
  let nats: NatsCluster;
  let influx: InfluxdHandle | undefined;
  let z: ZestProcess;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "zest-cond-race-"));
    [nats, influx] = await Promise.all([startNatsCluster({ size: 1 }), influxSkip ? undefined : startInfluxd()]);
    z = await startZest([
      ...NO_STORAGES,
      ...cfg("plugins/storage_manager/allowed_paths", [dir]),
      ...cfg("plugins/storage_manager/volumes/sq", { backend: "sqlite", path: join(dir, "race.db") }),
      ...cfg("plugins/storage_manager/volumes/js", { backend: "jetstream", servers: [nats.urls[0]] }),
      ...storage("mem", "mem/**", "memory"),
      ...storage("sql", "sql/**", "sq"),
      ...storage("jet", "jet/**", "js"),
      ...(influx
        ? [
            ...cfg("plugins/storage_manager/volumes/influxdb", { url: influx.url }),
            ...storage("flux", "flux/**", { id: "influxdb", db: "zest_cond_race", create_db: true }),
          ]
        : []),
    ]);
  });
  after(async () => {
    await z?.stop();
    await Promise.all([nats?.stop(), influx?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  test("memory: exactly one of four concurrent conditional writers wins, each round", () => raceOn([z.url], "mem"));
  test("SQLite: exactly one of four concurrent conditional writers wins, each round", () => raceOn([z.url], "sql"));
  test("JetStream: exactly one of four concurrent conditional writers wins, each round", () => raceOn([z.url], "jet"));
  test("InfluxDB: exactly one of four concurrent conditional writers wins, each round", { skip: influxSkip }, () =>
    raceOn([z.url], "flux"),
  );
});

describe("concurrent conditional writers on two routers sharing a JetStream bucket", () => {
  let nats: NatsCluster;
  let routers: ZestProcess[];
  before(async () => {
    nats = await startNatsCluster({ size: 1 });
    const args = [
      ...NO_STORAGES,
      "--nats",
      nats.urls[0]!,
      ...storage("shared", "shared/**", { id: "jetstream", bucket: "zest_cond_shared" }),
    ];
    routers = await startRouters([
      ["--id", "c1", ...args],
      ["--id", "c2", ...args],
    ]);
  });
  after(async () => {
    await Promise.all((routers ?? []).map((r) => r.stop()));
    await nats?.stop();
  });

  test("writers alternating between the routers: exactly one wins, and both routers then answer its value and ETag", async () => {
    const urls = routers.map((r) => r.url);
    await raceOn(urls, "shared");
    const [a, b] = routers as [ZestProcess, ZestProcess];
    await eventually(async () => {
      const [ga, gb] = await Promise.all([http(a.url, "GET", "/shared/k"), http(b.url, "GET", "/shared/k")]);
      return ga.text === gb.text && ga.headers.get("etag") === gb.headers.get("etag");
    });
    // An ETag read on one router is honoured by the other.
    const v = (await http(a.url, "GET", "/shared/k")).headers.get("etag")!;
    assert.equal(
      (await http(b.url, "PUT", "/shared/k", { body: "from b", headers: { ...TEXT, "if-match": v } })).status,
      200,
    );
    assert.equal(
      (await http(a.url, "PUT", "/shared/k", { body: "from a", headers: { ...TEXT, "if-match": v } })).status,
      412,
    );
  });
});
