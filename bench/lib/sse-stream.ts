/**
 * What the SSE latency benchmarks share: an SSE stream read on a raw socket (no client library
 * between the event and its clock reading), and a sender paced at a set rate.
 */
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

/** An event's `"value": "..."`, with or without the space (zest's layout, or serde_json's in zenohd). */
const VALUE = /"value":\s?"([^"]*)"/g;

/**
 * Opens the SSE stream of `path` on a raw socket; calls `onValue` with each event's value (a
 * string value without escapes) and the time its bytes arrived. Resolves once the 200 came.
 */
export async function openSseStream(
  url: URL,
  path: string,
  onValue: (value: string, now: number) => void,
): Promise<net.Socket> {
  const socket = net.connect({ host: url.hostname, port: Number(url.port) });
  socket.setEncoding("latin1");
  socket.setNoDelay(true);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", () =>
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`),
    );
    let buf = "";
    let head = true;
    socket.on("data", (chunk: string) => {
      const now = performance.now();
      buf += chunk;
      if (head) {
        const end = buf.indexOf("\r\n\r\n");
        if (end === -1) return;
        if (!buf.startsWith("HTTP/1.1 200")) return reject(new Error(`SSE answered ${buf.split("\r\n")[0]}`));
        head = false;
        buf = buf.slice(end + 4);
        resolve();
      }
      // Only whole events (ended by a blank line) are read.
      const last = buf.lastIndexOf("\n\n");
      if (last === -1) return;
      for (const m of buf.slice(0, last).matchAll(VALUE)) onValue(m[1]!, now);
      buf = buf.slice(last + 2);
    });
    socket.once("error", reject);
  });
  return socket;
}

/** Calls `send(seq)` `count` times at `rate` a second: every turn sends what is due by then. */
export async function paced(rate: number, count: number, send: (seq: number) => void): Promise<void> {
  const t0 = performance.now();
  let sent = 0;
  while (sent < count) {
    const due = Math.min(count, Math.floor(((performance.now() - t0) / 1000) * rate));
    for (; sent < due; sent++) send(sent);
    await sleep(1);
  }
}
