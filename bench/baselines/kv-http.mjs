// The HTTP floor of `cluster-conditional`: the least an HTTP gateway over a JetStream KV bucket can
// cost on this host. A bare node:http server; each PUT /<key> is one JetStream KV update with the
// expected revision its `If-Match: "<revision>"` names (a plain put without the header), answered
// 200 with the new revision as its ETag, or 412 when the revision is stale. GET answers the value
// and its ETag (404 when absent). No routing, no envelope, no fabric: what zest's conditional PUT
// costs beyond this is zest's own.
// `node bench/baselines/kv-http.mjs <nats url> <bucket> <replicas>`; the bucket is created if
// missing (history 1, like the jetstream volume). Keys: the path's `/` become `.` (KV tokens).
import { createServer } from "node:http";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";

const [url, bucket, replicas = "3"] = process.argv.slice(2);
if (!url || !bucket) {
  process.stderr.write("usage: kv-http.mjs <nats url> <bucket> [replicas]\n");
  process.exit(2);
}
/** Largest body read; beyond it 413 (the floor measures 100-byte values). */
const MAX_BODY = 1024 * 1024;
/** A KV key: one to 16 plain tokens. */
const KEY = /^[-\w]{1,64}(?:\.[-\w]{1,64}){0,15}$/;
/** JetStream's error code for a stale expected revision. */
const WRONG_LAST_SEQUENCE = 10071;

// noAsyncTraces, as zest's volume connection: no stack trace built per request.
const nc = await connect({ servers: url, noAsyncTraces: true });
const kv = await new Kvm(jetstream(nc)).create(bucket, {
  history: 1,
  replicas: Number(replicas),
  allow_direct: false,
});

function answer(res, status, headers = {}, body = "") {
  res.writeHead(status, { "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}

async function handle(req, res, key, body) {
  if (req.method === "GET") {
    const e = await kv.get(key);
    if (e?.operation !== "PUT") return answer(res, 404);
    return answer(res, 200, { etag: `"${e.revision}"` }, Buffer.from(e.value).toString("latin1"));
  }
  if (req.method !== "PUT") return answer(res, 405);
  const ifMatch = req.headers["if-match"];
  if (ifMatch === undefined) return answer(res, 200, { etag: `"${await kv.put(key, body)}"` });
  const m = /^"(\d{1,15})"$/.exec(ifMatch);
  if (!m) return answer(res, 400, {}, "If-Match must be one quoted revision");
  try {
    return answer(res, 200, { etag: `"${await kv.update(key, body, Number(m[1]))}"` });
  } catch (err) {
    if (err?.code === WRONG_LAST_SEQUENCE) return answer(res, 412);
    throw err;
  }
}

const server = createServer((req, res) => {
  const key = req.url.slice(1).replaceAll("/", ".");
  if (!KEY.test(key)) return answer(res, 400, {}, "bad key");
  const chunks = [];
  let size = 0;
  req.on("data", (c) => {
    size += c.length;
    if (size <= MAX_BODY) chunks.push(c);
  });
  req.on("end", () => {
    if (size > MAX_BODY) return answer(res, 413);
    handle(req, res, key, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)).catch((err) =>
      answer(res, 503, {}, String(err?.message ?? err)),
    );
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, "127.0.0.1", () => {
  process.stderr.write(`kv-http baseline serving http://127.0.0.1:${server.address().port}\n`);
});
process.once("SIGTERM", () => nc.close().finally(() => process.exit(0)));
process.once("SIGINT", () => nc.close().finally(() => process.exit(0)));
