// Baseline for `put`: a bare node:http server that reads the whole request body, then answers
// 200 with an empty body. Plain JS on plain node, like the built zest CLI it is compared with.
import { createServer } from "node:http";

const server = createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const _body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks); // buffered, as zest does
    res.writeHead(200, { "content-length": 0 });
    res.end();
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, "127.0.0.1", () => {
  process.stderr.write(`put-ok baseline serving http://127.0.0.1:${server.address().port}\n`);
});
process.once("SIGTERM", () => process.exit(0));
process.once("SIGINT", () => process.exit(0));
