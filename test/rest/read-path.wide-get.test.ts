/**
 * Wide GETs (issue 12): an answer of more than `STREAM_ENTRIES` entries is streamed with chunked
 * encoding, rendered as the client takes it. It must have exactly the bytes of the buffered
 * rendering, stop when the client goes away, and leave the router free for other requests.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { request, type IncomingMessage } from "node:http";
import { connect } from "node:net";
import { test } from "node:test";
import { hashSecret } from "../../src/access/hash.js";
import type { ZestConfig } from "../../src/zest-config.js";
import { silentLogger } from "../../src/core/log.js";
import type { Reply } from "../../src/core/reply.js";
import { type Layout, renderLayout } from "../../src/rest/layout.js";
import { STREAM_ENTRIES } from "../../src/rest/read-path.js";
import { codecA } from "../../src/rest/variant-a.js";
import { codecB, variantB } from "../../src/rest/variant-b.js";
import { startZest, type Zest } from "../../src/runtime.js";

const WIDE = STREAM_ENTRIES + 1000;

async function start(variant: "a" | "b"): Promise<{ zest: Zest; url: string }> {
  const zest = await startZest(
    { plugins: { rest: { http_port: "127.0.0.1:0", variant } } },
    { logger: silentLogger, variants: [variantB] },
  );
  return { zest, url: zest.restUrl!.replace("localhost", "127.0.0.1") };
}

/** Keys under `w/` with values of every rendering kind: text, JSON, numbers, binary, long text. */
async function fill(zest: Zest, n: number, bytes = 0): Promise<void> {
  const pad = "p".repeat(bytes);
  for (let i = 0; i < n; i++) {
    const key = `w/${i % 7}/${i}`;
    switch (i % 5) {
      case 0:
        await zest.session.put(key, `text ${i} "quoted" é${pad}`, { encoding: "text/plain" });
        break;
      case 1:
        await zest.session.put(key, `{ "n": ${i}, "s": "x y" }`, { encoding: "application/json" });
        break;
      case 2:
        await zest.session.put(key, String(i), { encoding: "application/integer" });
        break;
      case 3:
        await zest.session.put(key, Buffer.from([0xff, 0xfe, i & 0xff]), { encoding: "application/octet-stream" });
        break;
      default:
        await zest.session.put(key, `long ${"<&>".repeat(100)} ${i}${pad}`, { encoding: "text/plain" });
    }
  }
}

/** Counts the GETs the router answers by a storage's scan (`Router.scanStored` giving batches). */
function countScans(zest: Zest): () => number {
  const router = zest.router;
  const scanStored = router.scanStored.bind(router);
  let scans = 0;
  router.scanStored = (keyExpr) => {
    const batches = scanStored(keyExpr);
    if (batches !== undefined) scans++;
    return batches;
  };
  return () => scans;
}

/** Asserts two (long) texts are equal, naming the first difference (a full diff would take ages). */
function sameText(got: string, want: string): void {
  if (got === want) return;
  let i = 0;
  while (i < got.length && got[i] === want[i]) i++;
  assert.fail(
    `texts differ at ${i} (lengths ${got.length}, ${want.length}): got ${JSON.stringify(got.slice(i, i + 80))}, want ${JSON.stringify(want.slice(i, i + 80))}`,
  );
}

interface Response {
  status: number;
  headers: IncomingMessage["headers"];
  body: string;
}

function get(url: string, path: string, headers: Record<string, string> = {}): Promise<Response> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }),
      );
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/**
 * Counts the entries under `w/` the codec renders (`layout.entry` calls) while `f` runs: a wide
 * answer may be laid out in one layout or batch by batch (a storage's scan), and the one-key
 * GETs answered meanwhile are not counted.
 */
async function countingEntries<T>(codec: typeof codecA, f: (rendered: () => number) => Promise<T>): Promise<T> {
  const { layout, layoutSamples } = codec;
  let rendered = 0;
  const counting = (l: Layout, keyOf: (i: number) => string | undefined): Layout => ({
    ...l,
    entry: (i) => {
      if (keyOf(i)?.startsWith("w/")) rendered++;
      return l.entry(i);
    },
  });
  codec.layout = async (replies: Reply[], html: boolean): Promise<Layout> =>
    counting(await layout.call(codec, replies, html), (i) => {
      const reply = replies[i];
      return reply?.kind === "ok" ? reply.sample.key : undefined;
    });
  codec.layoutSamples = (samples, html) => counting(layoutSamples!.call(codec, samples, html), (i) => samples[i]?.key);
  try {
    return await f(() => rendered);
  } finally {
    codec.layout = layout;
    codec.layoutSamples = layoutSamples;
  }
}

for (const variant of ["a", "b"] as const) {
  test(`Variant ${variant.toUpperCase()}: a GET over ${WIDE} keys is streamed with the bytes of the buffered rendering`, async () => {
    const { zest, url } = await start(variant);
    const codec = variant === "a" ? codecA : codecB;
    try {
      await fill(zest, WIDE);
      const want = (await renderLayout(await codec.layout(await zest.session.get("w/**"), false))).body;
      const r = await get(url, "/w/**?fresh");
      assert.equal(r.status, 200);
      assert.equal(r.headers["transfer-encoding"], "chunked", "the answer was not streamed");
      assert.equal(r.headers["content-length"], undefined);
      assert.equal(r.headers["content-type"], "application/json");
      sameText(r.body, want);
      // The layout, checked on its own: one entry per key, in the variant's order and framing.
      const entries = JSON.parse(r.body) as Array<{ key: string }>;
      assert.equal(entries.length, WIDE);
      const keys = entries.map((e) => e.key);
      const sorted = [...keys].sort();
      const order = variant === "a" ? sorted : sorted.reverse();
      assert.equal(
        keys.findIndex((k, i) => k !== order[i]),
        -1,
        "the keys are out of order",
      );
      if (variant === "a") {
        assert.ok(
          r.body.startsWith(
            '[\n{ "key": "w/0/0", "value": "text 0 \\"quoted\\" é", "encoding": "text/plain", "time": "',
          ),
        );
        assert.ok(r.body.endsWith('" }\n]\n'));
        assert.equal(r.body.split("\n").length, WIDE + 3);
        assert.equal(r.body.split(" },\n{ ").length, WIDE);
      } else {
        assert.match(r.body.slice(0, 40), /^\[\n\{ "key": "\/w\/6\/\d+",\n {2}"value": /);
        assert.ok(r.body.endsWith('" }\n]'));
        assert.equal(r.body.split("\n").length, 3 * WIDE + 2);
        assert.equal(r.body.split(" },\n{ ").length, WIDE);
      }
      // A second time, and HEAD: still streamed (never cached), HEAD without a body.
      sameText((await get(url, "/w/**")).body, want);
      assert.equal((await get(url, "/w/**")).headers["transfer-encoding"], "chunked");
      const head = await new Promise<IncomingMessage>((resolve, reject) => {
        const u = new URL(url);
        const req = request({ host: u.hostname, port: u.port, path: "/w/**", method: "HEAD" }, (res) => {
          res.resume();
          res.on("end", () => resolve(res));
        });
        req.on("error", reject);
        req.end();
      });
      assert.equal(head.statusCode, 200);
      if (variant === "a") {
        const html = await get(url, "/w/**", { accept: "text/html" });
        assert.equal(html.headers["transfer-encoding"], "chunked");
        sameText(html.body, (await renderLayout(await codec.layout(await zest.session.get("w/**"), true))).body);
      }
      // Below the threshold, nothing changes: a Content-Length and the same rendering.
      const small = await get(url, "/w/1/**");
      assert.equal(small.headers["content-length"], String(Buffer.byteLength(small.body)));
      sameText(small.body, (await renderLayout(await codec.layout(await zest.session.get("w/1/**"), false))).body);
    } finally {
      await zest.close();
    }
  });
}

test("a client that goes away mid-stream stops the rendering, and the router goes on serving", async () => {
  const { zest, url } = await start("a");
  try {
    await fill(zest, 20_000, 2000);
    await zest.session.put("one/key", "1");
    await countingEntries(codecA, async (rendered) => {
      const u = new URL(url);
      // Read the head and one chunk, then hang up.
      await new Promise<void>((resolve, reject) => {
        const req = request({ host: u.hostname, port: u.port, path: "/w/**?run" }, (res) => {
          assert.equal(res.statusCode, 200);
          res.once("data", () => {
            req.destroy();
            resolve();
          });
        });
        req.on("error", (err) => (req.destroyed ? undefined : reject(err)));
        req.end();
      });
      // The router answers the next requests; the abandoned answer was not rendered to its end.
      for (let i = 0; i < 3; i++) {
        const one = await get(url, "/one/key?run");
        assert.equal(one.status, 200);
        assert.match(one.body, /"key": "one\/key"/);
      }
      assert.ok(rendered() < 20_000, "all 20,000 entries were rendered for a client that went away");
    });
    const again = await get(url, "/w/**?again");
    assert.equal(again.status, 200);
    assert.equal((JSON.parse(again.body) as unknown[]).length, 20_000);
  } finally {
    await zest.close();
  }
});

test("a one-key GET is answered while a wide GET's client is slow, and the wide answer is rendered only as it is read", async () => {
  const { zest, url } = await start("a");
  try {
    await fill(zest, 20_000, 2000);
    await zest.session.put("one/key", "1");
    const want = (await renderLayout(await codecA.layout(await zest.session.get("w/**"), false))).body;
    await countingEntries(codecA, async (rendered) => {
      const u = new URL(url);
      let wideEnded = false;
      let resume: () => void = () => {};
      const chunks: Buffer[] = [];
      const wide = new Promise<string>((resolve, reject) => {
        const req = request({ host: u.hostname, port: u.port, path: "/w/**?run" }, (res) => {
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            wideEnded = true;
            resolve(Buffer.concat(chunks).toString("utf8"));
          });
          // After the first chunk the client stops reading, until told to go on.
          res.once("data", () => {
            res.pause();
            resume = () => res.resume();
          });
        });
        req.on("error", reject);
        req.end();
      });
      while (chunks.length === 0) await new Promise((r) => setTimeout(r, 5));
      const one = await get(url, "/one/key?run");
      assert.equal(one.status, 200);
      assert.equal(wideEnded, false, "the wide GET ended before the one-key GET was answered");
      // The stream waits for the client: once the socket buffers are full it renders nothing
      // more, and it has not rendered the whole answer ahead of it.
      let before = -1;
      while (rendered() !== before && rendered() < 20_000) {
        before = rendered();
        await new Promise((r) => setTimeout(r, 25));
      }
      assert.ok(rendered() < 20_000, "all 20,000 entries were rendered for a client that reads nothing");
      resume();
      sameText(await wide, want);
      assert.equal(rendered(), 20_000);
    });
  } finally {
    await zest.close();
  }
});

test("a client that stops reading a streamed answer is dropped after response_idle_timeout_ms, and the router goes on serving", async () => {
  const zest = await startZest(
    { plugins: { rest: { http_port: "127.0.0.1:0", response_idle_timeout_ms: 200 } } } as ZestConfig,
    { logger: silentLogger },
  );
  const url = zest.restUrl!.replace("localhost", "127.0.0.1");
  try {
    await fill(zest, 20_000, 2000);
    await zest.session.put("one/key", "1");
    const full = Buffer.byteLength(
      (await renderLayout(await codecA.layout(await zest.session.get("w/**"), false))).body,
    );
    const u = new URL(url);
    // A raw socket that reads the first bytes, then nothing: the kernel buffers fill, and only
    // the router can end this.
    const socket = connect(Number(u.port), u.hostname);
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.write(`GET /w/**?run HTTP/1.1\r\nHost: ${u.host}\r\n\r\n`);
    await once(socket, "data");
    socket.pause();
    await new Promise((r) => setTimeout(r, 1000));
    // The router answers others meanwhile.
    const one = await get(url, "/one/key?run");
    assert.equal(one.status, 200);
    // Read what the router had sent before it dropped the connection.
    const ended = new Promise((r) => socket.once("close", r));
    socket.resume();
    await ended;
    const received = Buffer.concat(chunks);
    assert.ok(received.length < full, `a client that read nothing got the whole ${full}-byte answer`);
    assert.ok(!received.subarray(-5).equals(Buffer.from("0\r\n\r\n")), "the cut answer ended like a complete one");
  } finally {
    await zest.close();
  }
});

test("a wide GET that one storage answers alone is read by its scan, and filtered per key for a user who may read part of it", async () => {
  const hash = (s: string): string => hashSecret(s, { ln: 8 });
  const zest = await startZest(
    {
      plugins: { rest: { http_port: "127.0.0.1:0" } },
      access_control: {
        enabled: true,
        default_permission: "deny",
        rules: [
          { id: "w", messages: ["query"], key_exprs: ["w/**"], permission: "allow" },
          { id: "not 3", messages: ["query"], key_exprs: ["w/3/**"], permission: "deny" },
        ],
        subjects: [{ id: "reader", usernames: ["reader"] }],
        policies: [{ rules: ["w", "not 3"], subjects: ["reader"] }],
        users: [{ name: "reader", password_hash: hash("pw") }],
      },
    } as ZestConfig,
    { logger: silentLogger },
  );
  const url = zest.restUrl!.replace("localhost", "127.0.0.1");
  const scans = countScans(zest);
  try {
    await fill(zest, WIDE);
    const all = await zest.session.get("w/**");
    const readable = all.filter((r) => r.kind === "ok" && !r.sample.key.startsWith("w/3/"));
    assert.ok(readable.length > STREAM_ENTRIES && readable.length < all.length);
    const auth = { authorization: `Basic ${Buffer.from("reader:pw").toString("base64")}` };
    const r = await get(url, "/w/**?run", auth);
    assert.equal(r.status, 200);
    assert.equal(r.headers["transfer-encoding"], "chunked");
    assert.equal(scans(), 1, "the GET ran a query instead of the storage's scan");
    sameText(r.body, (await renderLayout(await codecA.layout(readable, false))).body);
    // A selector within w/3/** is refused whole; a small answer is scanned too, and sent whole.
    assert.equal((await get(url, "/w/3/**", auth)).status, 403);
    const small = await get(url, "/w/1/**?run", auth);
    assert.equal(small.headers["content-length"], String(Buffer.byteLength(small.body)));
    assert.equal(scans(), 2);
  } finally {
    await zest.close();
  }
});

test("a wide GET runs the query when a storage cannot answer it alone: _time, _raw, or several storages", async () => {
  const zest = await startZest(
    {
      plugins: {
        rest: { http_port: "127.0.0.1:0" },
        storage_manager: {
          storages: { all: { key_expr: "**", volume: "memory" }, w: { key_expr: "w/**", volume: "memory" } },
        },
      },
    } as ZestConfig,
    { logger: silentLogger },
  );
  const url = zest.restUrl!.replace("localhost", "127.0.0.1");
  const scans = countScans(zest);
  const keys = (body: string): string[] => (JSON.parse(body) as Array<{ key: string }>).map((e) => e.key);
  try {
    for (const k of ["w/b", "w/a", "x/b", "x/a"]) await zest.session.put(k, `v ${k}`, { encoding: "text/plain" });
    // Only the `all` storage holds x/**: scanned, in key order.
    assert.deepEqual(keys((await get(url, "/x/**?run")).body), ["x/a", "x/b"]);
    assert.equal(scans(), 1);
    // Two storages hold w/**: queried, each key once.
    assert.deepEqual(keys((await get(url, "/w/**?run")).body), ["w/a", "w/b"]);
    // A time range the values are not in, and _raw (the first reply alone): queried too.
    assert.deepEqual(keys((await get(url, "/x/**?_time=[now(-2h)..now(-1h)]")).body), []);
    const raw = await get(url, "/x/**?_raw=true");
    assert.equal(raw.body, "v x/a");
    assert.equal(raw.headers["content-type"], "text/plain");
    assert.equal(scans(), 1, "a GET that a scan cannot answer was scanned");
  } finally {
    await zest.close();
  }
});
