/**
 * A real `node:http2` client for the HTTP/2 tests: one request's status, head and text, an SSE
 * stream's events, and a session opened and connected.
 */
import { type ClientHttp2Session, type ClientHttp2Stream, connect, type SecureClientSessionOptions } from "node:http2";

/** What one HTTP/2 request got back. */
export interface H2Result {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** Sends one request on `session` and reads the whole answer. */
export function h2(
  session: ClientHttp2Session,
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<H2Result> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": method, ":path": path, ...headers });
    let text = "";
    let head: Record<string, string | string[] | undefined> = {};
    req.setEncoding("utf8");
    req.on("response", (h) => {
      head = h as typeof head;
    });
    req.on("data", (c: string) => {
      text += c;
    });
    req.on("end", () => resolve({ status: Number(head[":status"]), headers: head, text }));
    req.on("error", reject);
    req.end(body);
  });
}

/** An SSE stream over one HTTP/2 stream: the events' `event:` names and data, as they come. */
export function h2Sse(
  session: ClientHttp2Session,
  path: string,
  headers: Record<string, string> = {},
): { events: string[]; stream: ClientHttp2Stream } {
  const stream = session.request({ ":method": "GET", ":path": path, accept: "text/event-stream", ...headers });
  const events: string[] = [];
  let buf = "";
  stream.setEncoding("utf8");
  stream.on("data", (c: string) => {
    buf += c;
    for (let i = buf.indexOf("\n\n"); i !== -1; i = buf.indexOf("\n\n")) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = block.split("\n").find((l) => l.startsWith("data: "));
      const event = block.split("\n").find((l) => l.startsWith("event: "));
      if (data) events.push(`${event?.slice(7) ?? "message"} ${data.slice(6)}`);
    }
  });
  stream.on("error", () => {});
  return { events, stream };
}

/** An HTTP/2 session to `url` (h2c for http:, ALPN for https: with `options`), once connected. */
export async function h2Session(url: string, options?: SecureClientSessionOptions): Promise<ClientHttp2Session> {
  const session = connect(url, options);
  await new Promise<void>((resolve, reject) => {
    session.once("connect", () => resolve());
    session.once("error", reject);
  });
  return session;
}
