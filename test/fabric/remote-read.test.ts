/**
 * The one-key remote read path (docs/cluster.md, "What crosses routers"): a plain GET of one key
 * through a router that holds nothing of it is the fabric's query alone, answered without the
 * full REST pipeline. Each answer is checked against the full pipeline's for the same key (the
 * same URL with an empty query string, `?`, which takes it), on real routers over a real NATS
 * cluster: values, a miss, an eval, several holders, TTL deadlines, a frozen holder, HEAD, and
 * reads after acknowledged writes and conditional writes through other routers.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { http, type HttpResult } from "../support/http.js";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";
import { startZest, type ZestProcess } from "../support/zest-process.js";
import { eventually } from "../support/wait.js";
import { fabricTimings, memoryStorage, NO_STORAGES, putText, startRouters, untilRoutersMeet } from "./helpers.js";

/** Above C's 1.5 s query timeout: a frozen B is not forgotten while C waits for it. */
const TIMINGS = fabricTimings({ heartbeatMs: 250, peerTimeoutMs: 2_500, ackTimeoutMs: 3_500 });

/** What a GET answers that a client can see, but the date. */
function view(r: HttpResult): Record<string, string | number | null> {
  return {
    status: r.status,
    body: r.text,
    etag: r.headers.get("etag"),
    contentType: r.headers.get("content-type"),
    contentLength: r.headers.get("content-length"),
    expires: r.headers.get("zest-expires"),
    cors: r.headers.get("access-control-allow-origin"),
  };
}

/** The answer of the path under test (`/key`) and of the full pipeline (`/key?`), side by side. */
async function bothPaths(
  url: string,
  key: string,
  method = "GET",
): Promise<{ fast: ReturnType<typeof view>; full: ReturnType<typeof view> }> {
  const [fast, full] = await Promise.all([http(url, method, `/${key}`), http(url, method, `/${key}?`)]);
  return { fast: view(fast), full: view(full) };
}

describe("a one-key GET through a router that holds nothing of the key", () => {
  let cluster: NatsCluster;
  /** r/** storage. */
  let a: ZestProcess;
  /** r/** and b/** storages, the eval plugin. */
  let b: ZestProcess;
  /** No storage; query timeout 1.5 s. */
  let c: ZestProcess;

  before(async () => {
    cluster = await startNatsCluster();
    [a, b, c] = (await startRouters([
      ["--id", "A1", "--nats", cluster.urls[0]!, ...TIMINGS, ...memoryStorage("r_a", "r/**")],
      [
        "--id",
        "B1",
        "--nats",
        cluster.urls[1]!,
        ...TIMINGS,
        "-P",
        "examples/eval-plugin.js",
        ...memoryStorage("r_b", "r/**"),
        ...memoryStorage("b_only", "b/**"),
      ],
      ["--id", "C1", "--nats", cluster.urls[2]!, ...TIMINGS, "--query-timeout", "1500", ...NO_STORAGES],
    ])) as [ZestProcess, ZestProcess, ZestProcess];
    await untilRoutersMeet([a.url, b.url, c.url], 2);
  });
  after(async () => {
    if (b && b.proc.exitCode === null) b.proc.kill("SIGCONT"); // never leave a stopped process behind
    await Promise.all([a?.stop(), b?.stop(), c?.stop()]);
    await cluster?.stop();
  });

  test("answers what the full pipeline answers: values of every encoding, a miss, an eval, HEAD", async () => {
    const writes: Array<[string, string, string]> = [
      ["r/json", '{"temp":21.5,"room":"lab-1"}', "application/json"],
      ["r/text", "hello\nworld", "text/plain"],
      ["r/bin", "\u0000\u0001binary", "application/octet-stream"],
      ["r/props", "a=1;b=2", "application/properties"],
      ["b/one", "on B only", "text/plain"],
    ];
    for (const [key, body, type] of writes) {
      const r = await http(a.url, "PUT", `/${key}`, { body, headers: { "content-type": type } });
      assert.equal(r.status, 200, `${key}: ${r.text}`);
    }
    for (const [key] of writes) {
      const { fast, full } = await bothPaths(c.url, key);
      assert.equal(fast.status, 200, `${key}: ${String(fast.body)}`);
      assert.ok(fast.etag, `${key} has an ETag`);
      assert.deepEqual(fast, full, key);
      const head = await bothPaths(c.url, key, "HEAD");
      assert.deepEqual(head.fast, head.full, `HEAD ${key}`);
      assert.equal(head.fast.body, "");
    }
    // Two routers hold r/json: one entry, with the writer's timestamp.
    const entries = JSON.parse(String((await bothPaths(c.url, "r/json")).fast.body)) as Array<{ time: string }>;
    assert.equal(entries.length, 1);
    assert.match(entries[0]!.time, /\/A1$/);

    const miss = await bothPaths(c.url, "r/none");
    assert.deepEqual(miss.fast, miss.full);
    assert.equal(miss.fast.status, 200);
    assert.equal(miss.fast.body, "[\n\n]\n");

    // An eval answers with no timestamp: no ETag, "time": "None".
    const evaluated = await bothPaths(c.url, "demo/example/zest-eval");
    assert.deepEqual(evaluated.fast, evaluated.full);
    assert.equal(evaluated.fast.etag, null);
    assert.match(String(evaluated.fast.body), /"value": "Eval from zest!".*"time": "None"/);
  });

  test("a value written with a TTL shows its deadline, then is gone once it passed", async () => {
    const r = await http(b.url, "PUT", "/r/ttl?_ttl=1500ms", {
      body: "short",
      headers: { "content-type": "text/plain" },
    });
    assert.equal(r.status, 200, r.text);
    const live = await bothPaths(c.url, "r/ttl");
    assert.deepEqual(live.fast, live.full);
    assert.ok(live.fast.expires, "the deadline is answered");
    await new Promise((res) => setTimeout(res, 1_700));
    const gone = await bothPaths(c.url, "r/ttl");
    assert.deepEqual(gone.fast, gone.full);
    assert.equal(gone.fast.body, "[\n\n]\n");
  });

  test("reads after acknowledged writes through any router see them, and the ETag works as If-Match elsewhere", async () => {
    for (let i = 0; i < 40; i++) {
      const writer = i % 2 === 0 ? a : b;
      assert.equal((await putText(writer.url, "r/counter", String(i))).status, 200);
      const got = await http(c.url, "GET", "/r/counter");
      assert.equal(got.status, 200);
      assert.equal(
        (JSON.parse(got.text) as Array<{ value: unknown }>)[0]!.value,
        String(i),
        `read ${i} after writing it`,
      );
    }
    const read = await http(c.url, "GET", "/r/counter");
    const etag = read.headers.get("etag");
    assert.ok(etag);
    const ok = await http(a.url, "PUT", "/r/counter", {
      body: "100",
      headers: { "content-type": "text/plain", "if-match": etag },
    });
    assert.equal(ok.status, 200, ok.text);
    const stale = await http(b.url, "PUT", "/r/counter", {
      body: "101",
      headers: { "content-type": "text/plain", "if-match": etag },
    });
    assert.equal(stale.status, 412, stale.text);
    const after = await http(c.url, "GET", "/r/counter");
    assert.equal(after.headers.get("etag"), ok.headers.get("etag"));
    assert.equal((JSON.parse(after.text) as Array<{ value: unknown }>)[0]!.value, "100");
    // Deleted, then written again with the same value: each read shows the write it follows.
    assert.equal((await http(b.url, "DELETE", "/r/counter")).status, 200);
    const deleted = await bothPaths(c.url, "r/counter");
    assert.deepEqual(deleted.fast, deleted.full);
    assert.equal(deleted.fast.body, "[\n\n]\n");
    assert.equal((await putText(a.url, "r/counter", "100")).status, 200);
    const reread = await http(c.url, "GET", "/r/counter");
    assert.equal(reread.headers.get("etag"), (await http(a.url, "GET", "/r/counter")).headers.get("etag"));
    assert.notEqual(reread.headers.get("etag"), after.headers.get("etag"));
  });

  test("the routers' own key space stays refused, the admin space answered, through this path's router", async () => {
    assert.equal((await http(c.url, "GET", "/@repl/x")).status, 403);
    const admin = await http(c.url, "GET", "/@/router/A1");
    assert.equal(admin.status, 200);
    assert.match(admin.text, /"zid":"A1"|"zid": "A1"/);
  });

  test("access control on the router that asks: what it allows is answered as by the full pipeline, the rest refused", async () => {
    const dir = mkdtempSync(join(tmpdir(), "zest-remote-read-"));
    const cfg = join(dir, "acl.json5");
    writeFileSync(
      cfg,
      JSON.stringify({
        access_control: {
          enabled: true,
          default_permission: "deny",
          rules: [
            { id: "read r", messages: ["query"], key_exprs: ["r/**"], permission: "allow" },
            { id: "no secrets", messages: ["query"], key_exprs: ["r/secret/**"], permission: "deny" },
          ],
          subjects: [{ id: "local", cidrs: ["127.0.0.0/8", "::1/128"] }],
          policies: [{ rules: ["read r", "no secrets"], subjects: ["local"] }],
        },
      }),
    );
    let d: ZestProcess | undefined;
    try {
      d = await startZest(["-c", cfg, "--id", "D1", "--nats", cluster.urls[2]!, ...TIMINGS, ...NO_STORAGES]);
      assert.equal((await putText(a.url, "r/secret/x", "hidden")).status, 200);
      assert.equal((await putText(a.url, "r/open", "shown")).status, 200);
      const dUrl = d.url;
      await eventually(
        async () => (await http(dUrl, "GET", "/r/open")).text.includes("shown"),
        10_000,
        "D to read r/open",
      );
      const open = await bothPaths(dUrl, "r/open");
      assert.deepEqual(open.fast, open.full);
      assert.equal(open.fast.status, 200);
      for (const key of ["r/secret/x", "b/one"]) {
        const refused = await bothPaths(dUrl, key);
        assert.equal(refused.fast.status, 403, `${key}: ${String(refused.fast.body)}`);
        assert.deepEqual(refused.fast, refused.full, key);
      }
    } finally {
      await d?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a frozen holder: 504 with its ERROR entry and no ETag, within the timeout, as the full pipeline answers", async () => {
    assert.equal((await putText(b.url, "b/frozen", "here")).status, 200);
    b.proc.kill("SIGSTOP");
    try {
      const t0 = Date.now();
      const { fast, full } = await bothPaths(c.url, "b/frozen");
      const elapsed = Date.now() - t0;
      assert.equal(fast.status, 504);
      assert.equal(fast.etag, null);
      assert.deepEqual(JSON.parse(String(fast.body)), [
        { key: "ERROR", value: "Timeout: router B1 did not answer within 1500 ms", encoding: "text/plain" },
      ]);
      assert.deepEqual(fast, full);
      assert.ok(elapsed >= 1_400 && elapsed < 3_000, `answered after ${elapsed} ms`);
    } finally {
      b.proc.kill("SIGCONT");
    }
    await eventually(async () => (await http(c.url, "GET", "/b/frozen")).status === 200, 10_000, "B to answer again");
  });
});
