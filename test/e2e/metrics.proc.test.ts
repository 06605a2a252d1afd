/**
 * Metrics (docs/metrics.md): scrape a real router with a real parser of the Prometheus text
 * format after some traffic, and check that the counters moved by what was sent.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { after, describe, test } from "node:test";
import parsePrometheusTextFormat, { type MetricFamily as Family } from "parse-prometheus-text-format";
import { startZest as startInProcess, type Zest } from "../../src/runtime.js";
import { silentLogger } from "../../src/core/log.js";
import { getJson, http, openSse } from "../support/http.js";
import { zestForSuite } from "../support/zest-process.js";
import { eventually } from "../support/wait.js";

async function scrape(
  url: string,
  how: "raw" | "accept" = "raw",
): Promise<{ families: Map<string, Family>; contentType: string; text: string }> {
  const r =
    how === "raw"
      ? await http(url, "GET", "/@/router/local/metrics?_raw=true")
      : await http(url, "GET", "/@/router/local/metrics", { headers: { accept: "text/plain;version=0.0.4" } });
  assert.equal(r.status, 200);
  const families = parsePrometheusTextFormat(r.text);
  return {
    families: new Map(families.map((f) => [f.name, f])),
    contentType: r.headers.get("content-type") ?? "",
    text: r.text,
  };
}

function value(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const f = families.get(name);
  if (!f) return 0;
  const m = f.metrics.find((x) => Object.entries(labels).every(([k, v]) => x.labels?.[k] === v));
  return m ? Number(m.value ?? m.count) : 0;
}

describe("metrics of a real router", () => {
  const z = zestForSuite([
    "--id",
    "0C0D",
    "--cfg",
    'plugins/storage_manager/storages/m:{key_expr:"m/**",volume:"memory"}',
  ]);

  test("requests by method, variant and status, latency, bytes, SSE streams, storage sizes and process metrics", async (t) => {
    const before = (await scrape(z.url)).families;
    const req = (labels: Record<string, string>) =>
      value(before, "zest_http_requests_total", { variant: "a", ...labels });
    const put0 = req({ method: "PUT", status: "200" });
    const get0 = req({ method: "GET", status: "200" });
    const nf0 = req({ method: "GET", status: "404" });
    const bad0 = req({ method: "GET", status: "400" });
    const in0 = value(before, "zest_http_request_bytes_total");
    const sse = await openSse(`${z.url}/m/**`);
    t.after(() => sse.close());
    for (let i = 0; i < 3; i++)
      assert.equal(
        (await http(z.url, "PUT", `/m/k${i}`, { body: "12345", headers: { "content-type": "text/plain" } })).status,
        200,
      );
    await sse.next(3);
    assert.equal((await getJson(z.url, "/m/**")).status, 200);
    assert.equal((await http(z.url, "GET", "/m/none?_raw=true")).status, 404);
    assert.equal((await http(z.url, "GET", "/m//bad")).status, 400);

    const { families: after, contentType, text } = await scrape(z.url);
    assert.match(contentType, /^text\/plain; version=0\.0\.4/);
    const now = (labels: Record<string, string>) =>
      value(after, "zest_http_requests_total", { variant: "a", ...labels });
    assert.equal(now({ method: "PUT", status: "200" }) - put0, 3);
    // The GETs: one of /m/**, and the first scrape (a request is counted once it is answered).
    assert.equal(now({ method: "GET", status: "200" }) - get0, 2);
    assert.equal(now({ method: "GET", status: "404" }) - nf0, 1);
    assert.equal(now({ method: "GET", status: "400" }) - bad0, 1);
    assert.equal(
      value(after, "zest_http_request_bytes_total") - in0,
      15,
      JSON.stringify(after.get("zest_http_request_bytes_total")),
    );
    assert.ok(value(after, "zest_http_response_bytes_total") > 0);
    const hist = after.get("zest_http_request_duration_seconds")!;
    assert.equal(hist.type, "HISTOGRAM");
    // The parser flattens labelled histograms away: read their series from the text.
    const series = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1]);
    const putCount = series('zest_http_request_duration_seconds_count\\{method="PUT",variant="a"\\}');
    assert.ok(putCount >= 3, `PUT latency count ${putCount}`);
    assert.equal(
      series('zest_http_request_duration_seconds_bucket\\{le="\\+Inf",method="PUT",variant="a"\\}'),
      putCount,
    );
    assert.ok(series('zest_http_request_duration_seconds_sum\\{method="PUT",variant="a"\\}') > 0);
    // Every answered request but an SSE stream has a latency, in its own method's histogram: as
    // many observations per method as answers counted (the stream above is still open).
    for (const method of ["PUT", "GET"]) {
      const answered = after
        .get("zest_http_requests_total")!
        .metrics.filter((m) => m.labels?.method === method)
        .reduce((n, m) => n + Number(m.value), 0);
      assert.equal(
        series(`zest_http_request_duration_seconds_count\\{method="${method}",variant="a"\\}`),
        answered,
        `${method} latencies against ${method} answers`,
      );
    }
    assert.equal(value(after, "zest_sse_streams"), 1);
    assert.ok(value(after, "zest_sse_events_total") >= 3);
    assert.equal(value(after, "zest_storage_samples", { storage: "m" }), 3);
    assert.equal(value(after, "zest_storages"), 1, "the configured storage (no default one beside it)");
    assert.equal(value(after, "zest_fabric_connected"), 1);
    assert.equal(value(after, "zest_fabric_peers"), 0);
    assert.ok(after.has("nodejs_eventloop_lag_seconds"), "event-loop lag");
    assert.ok(after.has("nodejs_gc_duration_seconds"), "GC");
    assert.ok(after.has("process_cpu_user_seconds_total"));

    sse.close();
    await eventually(
      async () => value((await scrape(z.url)).families, "zest_sse_streams") === 0,
      5_000,
      "the stream to be released",
    );
  });

  test("single-key GETs answered at once, from the storage index or the read cache, are counted with their bytes", async () => {
    assert.equal(
      (await http(z.url, "PUT", "/m/one", { body: "hello", headers: { "content-type": "text/plain" } })).status,
      200,
    );
    const before = (await scrape(z.url)).families;
    const get0 = value(before, "zest_http_requests_total", { variant: "a", method: "GET", status: "200" });
    const out0 = value(before, "zest_http_response_bytes_total");
    let bodies = 0;
    for (let i = 0; i < 3; i++) {
      const r = await http(z.url, "GET", "/m/one");
      assert.equal(r.status, 200);
      assert.match(r.text, /"value": "hello"/);
      bodies += Buffer.byteLength(r.text);
    }
    const after = (await scrape(z.url)).families;
    // The three GETs and the first scrape (counted once answered).
    assert.equal(value(after, "zest_http_requests_total", { variant: "a", method: "GET", status: "200" }) - get0, 4);
    assert.ok(value(after, "zest_http_response_bytes_total") - out0 > bodies, "headers and bodies of the GETs");
  });

  test("Accept: text/plain reads the metrics raw, as a scraper asks", async () => {
    const { families, contentType } = await scrape(z.url, "accept");
    assert.match(contentType, /^text\/plain/);
    assert.ok(families.has("zest_http_requests_total"));
  });

  test("without _raw the metrics are an admin entry like any other", async () => {
    const { status, entries } = await getJson(z.url, "/@/router/local/metrics");
    assert.equal(status, 200);
    assert.equal(entries[0]?.key, "@/router/0C0D/metrics");
    assert.match(String(entries[0]?.value), /zest_http_requests_total/);
  });

  test("methods outside the known set are counted as OTHER, and the router keeps serving", async () => {
    const other0 = value((await scrape(z.url)).families, "zest_http_requests_total", {
      method: "OTHER",
      status: "405",
    });
    for (const m of ["PROPFIND", "MKCOL"]) assert.equal((await http(z.url, m, "/m/k0")).status, 405);
    const after = (await scrape(z.url)).families;
    assert.equal(value(after, "zest_http_requests_total", { method: "OTHER", status: "405" }) - other0, 2);
    assert.ok(!after.get("zest_http_requests_total")!.metrics.some((m) => m.labels?.method === "PROPFIND"));
  });

  test("a stream that falls 8 MiB behind is dropped and counted", async () => {
    const drops0 = value((await scrape(z.url)).families, "zest_sse_drops_total");
    const { hostname, port } = new URL(z.url);
    const socket = net.connect({ host: hostname, port: Number(port) });
    socket.write("GET /slow/** HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n");
    let head = "";
    await new Promise<void>((resolve) =>
      socket.on("data", function onHead(c: Buffer) {
        head += c.toString("latin1");
        if (head.includes("\r\n\r\n")) {
          socket.off("data", onHead);
          socket.pause(); // a client that stops reading
          resolve();
        }
      }),
    );
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    const mib = "x".repeat(1024 * 1024);
    try {
      for (let i = 0; i < 40 && value((await scrape(z.url)).families, "zest_sse_drops_total") === drops0; i++) {
        await http(z.url, "PUT", "/slow/k", { body: mib, headers: { "content-type": "text/plain" } });
      }
      assert.equal(value((await scrape(z.url)).families, "zest_sse_drops_total") - drops0, 1);
      socket.resume(); // read what was sent, then see the end
      await closed;
    } finally {
      socket.destroy();
    }
  });

  test("the metrics are read-only", async () => {
    const r = await http(z.url, "PUT", "/@/router/local/metrics", { body: "x" });
    assert.equal(r.status, 403);
  });

  test("every write is counted once, with the status it was answered with; a client that left mid-body as 0", async () => {
    const count = (f: Map<string, Family>, method: string, status: string): number =>
      value(f, "zest_http_requests_total", { variant: "a", method, status });
    const latencies = (text: string): number =>
      Number(/^zest_http_request_duration_seconds_count\{method="PUT",variant="a"\} (\S+)$/m.exec(text)?.[1] ?? 0);
    const before = await scrape(z.url);
    const f0 = before.families;

    assert.equal(
      (await http(z.url, "PUT", "/m/w", { body: "1", headers: { "content-type": "text/plain" } })).status,
      200,
    );
    assert.equal((await http(z.url, "PATCH", "/m/w", { body: "2" })).status, 200);
    assert.equal((await http(z.url, "DELETE", "/m/w")).status, 200);
    assert.equal((await http(z.url, "PUT", "/m//bad", { body: "x" })).status, 400);
    assert.equal((await http(z.url, "PUT", "/@/router/local/metrics", { body: "x" })).status, 403);
    assert.equal((await http(z.url, "PUT", "/m/w", { body: "x", headers: { "if-match": '"nope"' } })).status, 412);

    const { hostname, port } = new URL(z.url);
    const raw = async (text: string, leave: boolean): Promise<string> => {
      const socket = net.connect({ host: hostname, port: Number(port) });
      let got = "";
      socket.on("data", (c: Buffer) => (got += c.toString("latin1")));
      const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      socket.write(text);
      if (leave) {
        // Part of the body, then gone: the router waits for the rest until the socket closes.
        await new Promise((r) => setTimeout(r, 50));
        socket.destroy();
      }
      await closed;
      return got;
    };
    const tooLarge = await raw("PUT /m/big HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n", false);
    assert.match(tooLarge, /^HTTP\/1\.1 413 /);
    await raw("PUT /m/half HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n12345", true);

    await eventually(
      async () => count((await scrape(z.url)).families, "PUT", "0") - count(f0, "PUT", "0") === 1,
      5_000,
      "the PUT whose client left to be counted",
    );
    const { families: f1, text } = await scrape(z.url);
    assert.deepEqual(
      {
        put200: count(f1, "PUT", "200") - count(f0, "PUT", "200"),
        patch200: count(f1, "PATCH", "200") - count(f0, "PATCH", "200"),
        delete200: count(f1, "DELETE", "200") - count(f0, "DELETE", "200"),
        put400: count(f1, "PUT", "400") - count(f0, "PUT", "400"),
        put403: count(f1, "PUT", "403") - count(f0, "PUT", "403"),
        put412: count(f1, "PUT", "412") - count(f0, "PUT", "412"),
        put413: count(f1, "PUT", "413") - count(f0, "PUT", "413"),
        put0: count(f1, "PUT", "0") - count(f0, "PUT", "0"),
      },
      { put200: 1, patch200: 1, delete200: 1, put400: 1, put403: 1, put412: 1, put413: 1, put0: 1 },
    );
    // Every PUT is timed once, the one whose client left included.
    assert.equal(latencies(text) - latencies(before.text), 6);
  });
});

describe("metrics of two routers in one process", () => {
  const routers: Zest[] = [];
  after(async () => {
    for (const r of routers) await r.close();
  });

  test("each router has its own registry: no collision, and each counts its own requests", async () => {
    for (const id of ["0E01", "0E02"])
      routers.push(
        await startInProcess({ id, plugins: { rest: { http_port: "127.0.0.1:0" } } }, { logger: silentLogger }),
      );
    const [a, b] = routers as [Zest, Zest];
    for (let i = 0; i < 2; i++)
      await http(a.restUrl!.replace("localhost", "127.0.0.1"), "PUT", "/two/a", { body: "x" });
    await http(b.restUrl!.replace("localhost", "127.0.0.1"), "PUT", "/two/b", { body: "x" });
    const fa = (await scrape(a.restUrl!.replace("localhost", "127.0.0.1"))).families;
    const fb = (await scrape(b.restUrl!.replace("localhost", "127.0.0.1"))).families;
    assert.equal(value(fa, "zest_http_requests_total", { method: "PUT", status: "200" }), 2);
    assert.equal(value(fb, "zest_http_requests_total", { method: "PUT", status: "200" }), 1);
    assert.ok(fa.has("nodejs_eventloop_lag_seconds") && fb.has("nodejs_eventloop_lag_seconds"));
  });
});
