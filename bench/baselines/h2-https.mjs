// Baseline for `https`, the share of Node's HTTP/2 server: a bare `http2.createSecureServer` with
// `allowHTTP1: true` (as zest's TLS port has by default) and the same certificate, so HTTP/1.1
// clients (autocannon) go through the http2 server's fallback to node:http. Modes as https.mjs:
// `get` answers every request with a fixed JSON body (argv[5]); `put` reads the whole body, then
// answers 200 with an empty body.
import { readFileSync } from "node:fs";
import { createSecureServer } from "node:http2";

const [mode, certPath, keyPath, json] = process.argv.slice(2);
const body = Buffer.from(json ?? "{}");
const server = createSecureServer(
  { cert: readFileSync(certPath), key: readFileSync(keyPath), allowHTTP1: true },
  (req, res) => {
    if (mode === "get") {
      res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
      res.end(body);
      return;
    }
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const _whole = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks); // buffered, as zest does
      res.writeHead(200, { "content-length": 0 });
      res.end();
    });
  },
);
server.keepAliveTimeout = 65_000;
server.listen(0, "127.0.0.1", () => {
  process.stderr.write(`h2 (allowHTTP1) ${mode} baseline serving https://127.0.0.1:${server.address().port}\n`);
});
process.once("SIGTERM", () => process.exit(0));
process.once("SIGINT", () => process.exit(0));
