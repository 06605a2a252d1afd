// Baseline for `join-sse`: the least a Node gateway joined to zenoh's router costs on this host.
// A lean zenoh client (bench/lib/zenoh-client.ts) subscribed on `bench/relay/**` at the router
// whose port is the first argument, and a bare node:http server handing each put's payload at
// once, as an SSE event `data: {"value": "<payload>"}`, to every GET holding an event stream: the
// same hops as a put reaching zest's SSE through the join (the router, one more node process, the
// reader), without zest's routing, storage or codecs. Runs under tsx (`--import tsx`).
import { createServer, type ServerResponse } from "node:http";
import { LeanZenohClient } from "../lib/zenoh-client.js";

const routerPort = Number(process.argv[2]);
const streams = new Set<ServerResponse>();
const sub = await LeanZenohClient.connect("127.0.0.1", routerPort);
sub.onPayloads((payload) => {
  const out = `event: PUT\ndata: {"key": "bench/relay/k", "value": "${payload.toString("latin1")}"}\n\n`;
  for (const s of streams) s.write(out);
});
sub.declare({ kind: "subscriber", id: 1, key: { scope: 0, suffix: "bench/relay/**", senderMapping: false } });
const server = createServer((req, res) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.flushHeaders();
  res.socket?.setNoDelay(true);
  streams.add(res);
  req.on("close", () => streams.delete(res));
});
server.listen(0, "127.0.0.1", () => {
  const a = server.address();
  if (a !== null && typeof a === "object") console.log(`serving http://127.0.0.1:${a.port}`);
});
