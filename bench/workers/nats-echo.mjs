// The answering side of the NATS floors (bench/lib/nats-floor.ts): a plain Node process with
// one connection that answers every message on <subject> with <reply bytes> bytes, as router A
// answers a query or router B acknowledges a sample, with no zest at all.
// `node bench/workers/nats-echo.mjs <url> <subject> <reply bytes>`; prints `ready` once
// subscribed, then answers until SIGTERM.
import { connect } from "@nats-io/transport-node";

const [url, subject, replyBytes] = process.argv.slice(2);
const answer = new TextEncoder().encode("y".repeat(Number(replyBytes)));

const nc = await connect({ servers: url, noEcho: true });
nc.subscribe(subject, {
  callback: (_err, msg) => {
    msg.respond(answer);
  },
});
await nc.flush();
console.log("ready");
process.once("SIGTERM", () => {
  void nc.close().finally(() => process.exit(0));
});
