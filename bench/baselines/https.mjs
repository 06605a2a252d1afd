// Baseline for `https`: a bare node:https server with the same certificate as zest. Mode
// `get` answers every request with a fixed JSON body (argv[5]); mode `put` reads the whole body,
// then answers 200 with an empty body. Plain JS on plain node, like the built zest CLI.
import { readFileSync } from "node:fs";
import { createServer } from "node:https";

const [mode, certPath, keyPath, json] = process.argv.slice(2);
const body = Buffer.from(json ?? "{}");
const server = createServer({ cert: readFileSync(certPath), key: readFileSync(keyPath) }, (req, res) => {
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
});
server.keepAliveTimeout = 65_000;
server.listen(0, "127.0.0.1", () => {
  process.stderr.write(`https ${mode} baseline serving https://127.0.0.1:${server.address().port}\n`);
});
process.once("SIGTERM", () => process.exit(0));
process.once("SIGINT", () => process.exit(0));
