// Baseline for `get`: a bare node:http server answering every request with a fixed JSON body
// (argv[2], the same 60 bytes zest holds under the key it serves). Plain JS on plain node, like
// the built zest CLI it is compared with.
import { createServer } from "node:http";

const body = Buffer.from(process.argv[2] ?? '{"sensor":"bench/one","celsius":21.5,"ok":true,"seq":123456}');
const server = createServer((_req, res) => {
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
  res.end(body);
});
server.keepAliveTimeout = 65_000;
server.listen(0, "127.0.0.1", () => {
  process.stderr.write(`get-json baseline serving http://127.0.0.1:${server.address().port}\n`);
});
process.once("SIGTERM", () => process.exit(0));
process.once("SIGINT", () => process.exit(0));
