// Floor for `zenoh-ping`: a bare node:net relay. `node tcp-relay.mjs <host> <port>` listens on a
// free loopback port and joins each accepted connection to a new one to <host>:<port>, bytes
// passed on as they arrive, both ways, with Nagle off on both sockets (as zest's zenoh door).
// One process hop each way, exactly like a zenoh session through zest, with no zenoh work: the
// least any Node.js router on this host adds to a round trip.
import { connect, createServer } from "node:net";

const [host, port] = process.argv.slice(2);
if (host === undefined || !Number.isInteger(Number(port))) {
  process.stderr.write("usage: tcp-relay.mjs <target host> <target port>\n");
  process.exit(2);
}

/** Passes `from`'s bytes to `to`, holding `from` while `to` has not taken the last ones. */
function forward(from, to) {
  from.on("data", (chunk) => {
    if (!to.write(chunk)) from.pause();
  });
  to.on("drain", () => from.resume());
  from.on("end", () => to.end());
  from.on("error", () => to.destroy());
  from.on("close", () => to.destroy());
}

const server = createServer((down) => {
  down.setNoDelay(true);
  // Writes before the connection is up are queued by the socket.
  const up = connect({ host, port: Number(port), noDelay: true });
  forward(down, up);
  forward(up, down);
});
server.listen(0, "127.0.0.1", () => {
  // bench/lib/proc.ts's spawnServer reads the port from a `serving http://` line: the relay is raw TCP.
  process.stderr.write(`tcp-relay baseline serving http://127.0.0.1:${server.address().port}\n`);
});
process.once("SIGTERM", () => process.exit(0));
process.once("SIGINT", () => process.exit(0));
