// Baseline for `mixed`: a bare node:http server that answers a GET with a fixed JSON body
// (argv[2], 60 bytes) and a PUT by reading the whole body, then 200 with an empty body: the
// `get-json.mjs` and `put-ok.mjs` baselines in one server. Plain JS on plain node.
import { createServer } from "node:http";

const body = Buffer.from(process.argv[2] ?? '{"sensor":"bench/one","celsius":21.5,"ok":true,"seq":123456}');
const server = createServer((req, res) => {
  if (req.method === "GET") {
    res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
    res.end(body);
    return;
  }
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    void (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)); // buffered, as zest does
    res.writeHead(200, { "content-length": 0 });
    res.end();
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, "127.0.0.1", () => {
  process.stderr.write(`mixed baseline serving http://127.0.0.1:${server.address().port}\n`);
});
process.once("SIGTERM", () => process.exit(0));
process.once("SIGINT", () => process.exit(0));
