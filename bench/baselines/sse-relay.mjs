// Baseline for `zenoh-sse` and `zenohd-rest`: a bare node:http relay. A POST streams lines
// (`<seq>:<sent ms>\n`) in a chunked body; each line goes out at once, as an SSE event
// `data: {"value": "<line>"}`, to every GET holding an event stream; a body's last line without
// a newline (a PUT of one value) goes out when the body ends, before the 200. The same hops as a zenoh put reaching zest's SSE (a
// sender, one more node process, the reader), without zenoh or routing: the floor of this host.
import { createServer } from "node:http";

const streams = new Set();
const server = createServer((req, res) => {
  if (req.method === "GET") {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.flushHeaders();
    streams.add(res);
    req.on("close", () => streams.delete(res));
    return;
  }
  let partial = "";
  req.setEncoding("latin1");
  req.on("data", (chunk) => {
    const lines = (partial + chunk).split("\n");
    partial = lines.pop();
    let out = "";
    for (const l of lines) out += `event: PUT\ndata: {"key": "bench/zsse/k", "value": "${l}"}\n\n`;
    if (out !== "") for (const s of streams) s.write(out);
  });
  req.on("end", () => {
    if (partial !== "") {
      const out = `event: PUT\ndata: {"key": "bench/zsse/k", "value": "${partial}"}\n\n`;
      for (const s of streams) s.write(out);
    }
    res.end();
  });
});
server.listen(0, "127.0.0.1", () => {
  process.stderr.write(`sse-relay baseline serving http://127.0.0.1:${server.address().port}\n`);
});
process.once("SIGTERM", () => process.exit(0));
process.once("SIGINT", () => process.exit(0));
