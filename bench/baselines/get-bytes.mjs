// Baseline for `get-wild`: a bare node:http server answering every request with the bytes of a
// file (argv[2]: the answer zest gave to the same GET, rendered beforehand), as application/json.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";

const body = readFileSync(process.argv[2]);
const server = createServer((_req, res) => {
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
  res.end(body);
});
server.keepAliveTimeout = 65_000;
server.listen(0, "127.0.0.1", () => {
  process.stderr.write(`get-bytes baseline serving http://127.0.0.1:${server.address().port}\n`);
});
process.once("SIGTERM", () => process.exit(0));
process.once("SIGINT", () => process.exit(0));
