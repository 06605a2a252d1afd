/**
 * Conditional writes across routers (docs/conditional-writes.md, "Across routers"): three routers
 * over a real three-node NATS cluster, clients on every router. A counter incremented with
 * GET → PUT n+1 `If-Match` must read, on every router, exactly the number of increments answered
 * 200; a key claimed with `If-None-Match: *` must get exactly one owner.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { http } from "../support/http.js";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";
import type { ZestProcess } from "../support/zest-process.js";
import { NO_STORAGES, routerStatus, startRouters } from "../fabric/helpers.js";
import { eventually } from "../support/wait.js";

const TEXT = { "content-type": "text/plain" };
/** How long the clients increment the counter. */
const RUN_MS = 2_500;
const CLIENTS_PER_ROUTER = 2;
const LOCK_KEYS = 12;
const LOCKERS_PER_ROUTER = 3;

const cfg = (path: string, value: unknown): string[] => ["--cfg", `${path}:${JSON.stringify(value)}`];

/** The counter's value as `url` reads it, with its ETag. */
async function readCounter(url: string, key: string): Promise<{ value: number; etag: string | null }> {
  const r = await http(url, "GET", `/${key}`);
  const entries = JSON.parse(r.text) as Array<{ value: unknown }>;
  return { value: Number(entries[0]?.value), etag: r.headers.get("etag") };
}

/**
 * Clients on every router loop GET → PUT n+1 with If-Match for `RUN_MS`; returns the number of
 * PUTs answered 200 and the statuses other than 200 and 412 (with their reasons).
 */
async function incrementRace(urls: readonly string[], key: string): Promise<{ ok: number; others: string[] }> {
  let ok = 0;
  const others: string[] = [];
  const end = Date.now() + RUN_MS;
  const client = async (url: string): Promise<void> => {
    while (Date.now() < end) {
      const { value, etag } = await readCounter(url, key);
      assert.ok(etag !== null && Number.isInteger(value), `GET ${key} answers a counter and its ETag`);
      const r = await http(url, "PUT", `/${key}`, { body: String(value + 1), headers: { ...TEXT, "if-match": etag } });
      if (r.status === 200) ok++;
      else if (r.status !== 412) others.push(`${r.status} ${r.text.trim()}`);
    }
  };
  await Promise.all(urls.flatMap((url) => Array.from({ length: CLIENTS_PER_ROUTER }, () => client(url))));
  return { ok, others };
}

/** Runs the counter and asserts every router reads exactly the increments answered 200. */
async function assertExactCounter(urls: readonly string[], key: string): Promise<void> {
  assert.equal((await http(urls[0]!, "PUT", `/${key}`, { body: "0", headers: TEXT })).status, 200);
  await eventually(async () => (await Promise.all(urls.map((u) => readCounter(u, key)))).every((c) => c.value === 0));
  const { ok, others } = await incrementRace(urls, key);
  console.log(
    `# ${key}: ${ok} increments answered 200; other answers: ${others.length} ${others.slice(0, 3).join(" | ")}`,
  );
  assert.ok(ok > 0, "some increments succeed");
  assert.deepEqual(others, [], "every conditional PUT is answered 200 or 412");
  let finals: number[] = [];
  await eventually(
    async () => {
      finals = (await Promise.all(urls.map((u) => readCounter(u, key)))).map((c) => c.value);
      return finals.every((v) => v === finals[0]);
    },
    5_000,
    "the routers to agree",
  ).catch(() => undefined);
  assert.deepEqual(
    finals,
    urls.map(() => ok),
    `every router reads the ${ok} increments answered 200 (no lost update); others: ${others.slice(0, 3).join(" | ")}`,
  );
}

/**
 * `LOCKERS_PER_ROUTER` clients per router race to create each of `LOCK_KEYS` fresh keys with
 * If-None-Match: *; asserts every key got exactly one owner, and holds its value everywhere.
 */
async function assertOneOwner(urls: readonly string[], prefix: string): Promise<void> {
  const owners: string[] = [];
  for (let k = 0; k < LOCK_KEYS; k++) {
    const key = `${prefix}/lock${k}`;
    const claims = urls.flatMap((url, r) =>
      Array.from({ length: LOCKERS_PER_ROUTER }, (_, i) =>
        http(url, "PUT", `/${key}`, { body: `r${r}c${i}`, headers: { ...TEXT, "if-none-match": "*" } }).then((res) => ({
          res,
          owner: `r${r}c${i}`,
        })),
      ),
    );
    const answers = await Promise.all(claims);
    const won = answers.filter((a) => a.res.status === 200);
    for (const a of answers)
      if (a.res.status !== 200) assert.equal(a.res.status, 412, `${key}: a losing claim gets 412, not ${a.res.text}`);
    assert.equal(won.length, 1, `${key}: exactly one owner, got ${won.map((w) => w.owner).join(", ")}`);
    owners.push(won[0]!.owner);
    await eventually(async () => {
      for (const url of urls) if ((await readCounterText(url, key)) !== won[0]!.owner) return false;
      return true;
    });
  }
}

async function readCounterText(url: string, key: string): Promise<unknown> {
  const entries = JSON.parse((await http(url, "GET", `/${key}`)).text) as Array<{ value: unknown }>;
  return entries[0]?.value;
}

/** Starts three routers, router `i` on NATS node `i % nodes`, with `storageArgs(i)`, and waits until they met. */
async function threeRouters(cluster: NatsCluster, storageArgs: (i: number) => string[]): Promise<ZestProcess[]> {
  const routers = await startRouters(
    ["A1", "B1", "C1"].map((id, i) => [
      "--id",
      id,
      "--nats",
      cluster.urls[i % cluster.urls.length]!,
      ...NO_STORAGES,
      ...storageArgs(i),
    ]),
  );
  for (const z of routers)
    await eventually(
      async () => (await routerStatus(z.url)).fabric.detail.routers.length === 2,
      10_000,
      "routers to meet",
    );
  return routers;
}

describe("conditional writes across three routers", () => {
  let cluster: NatsCluster;
  let routers: ZestProcess[] = [];
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "zest-cas-"));
    cluster = await startNatsCluster();
    routers = await threeRouters(cluster, (i) => [
      ...cfg("plugins/storage_manager/storages/cas", {
        key_expr: "cas/**",
        volume: { id: "jetstream", replicas: 3 },
      }),
      ...cfg("plugins/storage_manager/storages/mem", { key_expr: "mem/**", volume: "memory" }),
      // Each router its own SQLite file: storages kept apart, as memory ones.
      ...cfg("plugins/storage_manager/allowed_paths", [dir]),
      ...cfg("plugins/storage_manager/volumes/sq", { backend: "sqlite", path: join(dir, `r${i}.db`) }),
      ...cfg("plugins/storage_manager/storages/sql", { key_expr: "sql/**", volume: "sq" }),
    ]);
  });
  after(async () => {
    await Promise.all(routers.map((r) => r.stop()));
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("jetstream volume: a counter incremented with If-Match through every router loses no update", () =>
    assertExactCounter(
      routers.map((r) => r.url),
      "cas/counter",
    ));

  test("jetstream volume: If-None-Match: * gives each key exactly one owner across routers", () =>
    assertOneOwner(
      routers.map((r) => r.url),
      "cas",
    ));

  test("memory storages: a counter incremented with If-Match through every router loses no update", () =>
    assertExactCounter(
      routers.map((r) => r.url),
      "mem/counter",
    ));

  test("memory storages: If-None-Match: * gives each key exactly one owner across routers", () =>
    assertOneOwner(
      routers.map((r) => r.url),
      "mem",
    ));

  test("SQLite storages: a counter incremented with If-Match through every router loses no update", () =>
    assertExactCounter(
      routers.map((r) => r.url),
      "sql/counter",
    ));

  test("an ETag read through one router works as If-Match through another, and a conditional DELETE is claimed too", async () => {
    const [a, b, c] = routers.map((r) => r.url) as [string, string, string];
    assert.equal((await http(a, "PUT", "/mem/etag", { body: "1", headers: TEXT })).status, 200);
    const etag = (await readCounter(b, "mem/etag")).etag!;
    const put = await http(c, "PUT", "/mem/etag", { body: "2", headers: { ...TEXT, "if-match": etag } });
    assert.equal(put.status, 200, put.text);
    // The old ETag is spent everywhere; the new one (answered by c) works through a.
    assert.equal(
      (await http(b, "PUT", "/mem/etag", { body: "3", headers: { ...TEXT, "if-match": etag } })).status,
      412,
    );
    const fresh = put.headers.get("etag")!;
    assert.equal((await readCounter(a, "mem/etag")).etag, fresh);
    const gone = await Promise.all([
      http(a, "DELETE", "/mem/etag", { headers: { "if-match": fresh } }),
      http(b, "DELETE", "/mem/etag", { headers: { "if-match": fresh } }),
    ]);
    assert.deepEqual(gone.map((r) => r.status).sort(), [200, 412], gone.map((r) => r.text).join(" | "));
    for (const url of [a, b, c]) assert.equal(await readCounterText(url, "mem/etag"), undefined);
  });
});

describe("conditional writes across routers on a NATS cluster without JetStream", () => {
  let cluster: NatsCluster;
  let routers: ZestProcess[] = [];
  before(async () => {
    cluster = await startNatsCluster({ size: 1, jetstream: false });
    routers = await threeRouters(cluster, (i) => [
      ...cfg("plugins/storage_manager/storages/mem", { key_expr: "mem/**", volume: "memory" }),
      ...(i === 0 ? cfg("plugins/storage_manager/storages/own", { key_expr: "own/**", volume: "memory" }) : []),
    ]);
  });
  after(async () => {
    await Promise.all(routers.map((r) => r.stop()));
    await cluster?.stop();
  });

  test("a conditional write on a key other routers hold is refused with 409 and its reason; nothing is written", async () => {
    const [a, b] = routers.map((r) => r.url) as [string, string];
    assert.equal((await http(a, "PUT", "/mem/k", { body: "1", headers: TEXT })).status, 200, "plain writes work");
    const etag = (await readCounter(b, "mem/k")).etag!;
    for (const headers of [{ "if-match": etag }, { "if-match": "*" }]) {
      const r = await http(b, "PUT", "/mem/k", { body: "2", headers: { ...TEXT, ...headers } });
      assert.equal(r.status, 409, r.text);
      assert.match(r.text, /needs JetStream on the NATS cluster: storages on other routers hold the key/);
    }
    const create = await http(a, "PUT", "/mem/new", { body: "x", headers: { ...TEXT, "if-none-match": "*" } });
    assert.equal(create.status, 409, create.text);
    const del = await http(a, "DELETE", "/mem/k", { headers: { "if-match": etag } });
    assert.equal(del.status, 409, del.text);
    for (const url of routers.map((r) => r.url)) {
      assert.equal(String(await readCounterText(url, "mem/k")), "1", "the refused writes changed nothing");
      assert.equal(await readCounterText(url, "mem/new"), undefined);
    }
  });

  test("a conditional write on a key only this router holds needs no JetStream", async () => {
    const [a] = routers.map((r) => r.url) as [string];
    const r = await http(a, "PUT", "/own/k", { body: "1", headers: { ...TEXT, "if-none-match": "*" } });
    assert.equal(r.status, 200, r.text);
    const again = await http(a, "PUT", "/own/k", { body: "2", headers: { ...TEXT, "if-none-match": "*" } });
    assert.equal(again.status, 412, again.text);
  });
});
