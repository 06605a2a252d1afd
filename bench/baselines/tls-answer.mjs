// The request handler and TLS material shared by the HTTPS baselines (https.mjs, h2-https.mjs).
// Mode `get` answers every request with a fixed JSON body; mode `put` reads the whole body, then
// answers 200 with an empty body.
import { readFileSync } from "node:fs";

/** argv after the script: mode, certificate path, key path, and the JSON body of `get`. */
export function baselineArgs(argv) {
  const [mode, certPath, keyPath, json] = argv;
  return { mode, tls: { cert: readFileSync(certPath), key: readFileSync(keyPath) }, body: Buffer.from(json ?? "{}") };
}

/** The request listener of `mode`. */
export function answer(mode, body) {
  return (req, res) => {
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
  };
}

/** Serves on a free loopback port, says so on stderr as the bench runner reads it, and stops on a signal. */
export function serve(server, label) {
  server.keepAliveTimeout = 65_000;
  server.listen(0, "127.0.0.1", () => {
    process.stderr.write(`${label} serving https://127.0.0.1:${server.address().port}\n`);
  });
  process.once("SIGTERM", () => process.exit(0));
  process.once("SIGINT", () => process.exit(0));
}
