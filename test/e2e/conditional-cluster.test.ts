/**
 * Conditional writes across routers (docs/conditional-writes.md, "Across routers"): three routers
 * over a real three-node NATS cluster, clients on every router. A counter incremented with
 * GET → PUT n+1 `If-Match` must read, on every router, exactly the number of increments answered
 * 200; a key claimed with `If-None-Match: *` must get exactly one owner.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { eventually, http } from "../support/http.js";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";
import type { ZestProcess } from "../support/zest-process.js";
import { NO_STORAGES, routerStatus, startRouters } from "../fabric/helpers.js";

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
  console.log(`# ${key}: ${ok} increments answered 200; other answers: ${others.length}`);
  assert.ok(ok > 0, "some increments succeed");
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

/** Starts three routers, router `i` on NATS node `i`, each with `storageArgs`, and waits until they met. */
async function threeRouters(cluster: NatsCluster, storageArgs: string[]): Promise<ZestProcess[]> {
  const routers = await startRouters(
    ["A1", "B1", "C1"].map((id, i) => ["--id", id, "--nats", cluster.urls[i]!, ...NO_STORAGES, ...storageArgs]),
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
  before(async () => {
    cluster = await startNatsCluster();
    routers = await threeRouters(cluster, [
      ...cfg("plugins/storage_manager/storages/cas", {
        key_expr: "cas/**",
        volume: { id: "jetstream", replicas: 3 },
      }),
      ...cfg("plugins/storage_manager/storages/mem", { key_expr: "mem/**", volume: "memory" }),
    ]);
  });
  after(async () => {
    await Promise.all(routers.map((r) => r.stop()));
    await cluster?.stop();
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
});
