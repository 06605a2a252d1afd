// Floor for `live-memory`: a bare node server that takes requests and never answers them, so
// what it holds per request is Node's own (the socket or HTTP/2 stream, the parser, the request
// and response objects). Mode `h1`: node:http on a plain port; mode `h2`: node:http2 over TLS
// (argv[3], argv[4]: certificate and key), with zest's stream limit. Plain JS on plain node.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createSecureServer } from "node:http2";

const [mode, certPath, keyPath] = process.argv.slice(2);
let held = 0;
const hold = () => {
  held++;
};
const server =
  mode === "h2"
    ? createSecureServer(
        {
          cert: readFileSync(certPath),
          key: readFileSync(keyPath),
          allowHTTP1: true,
          settings: { maxConcurrentStreams: 256 },
        },
        hold,
      )
    : createServer({ requestTimeout: 0 }, hold);
server.keepAliveTimeout = 65_000;
server.listen(0, "127.0.0.1", () => {
  const scheme = mode === "h2" ? "https" : "http";
  process.stderr.write(`hold-open ${mode} baseline serving ${scheme}://127.0.0.1:${server.address().port}\n`);
});
process.once("SIGTERM", () => process.exit(held >= 0 ? 0 : 1));
process.once("SIGINT", () => process.exit(0));
