/** Small HTTP helpers for end-to-end tests (real requests with fetch). */

import { Buffer } from "node:buffer";
import nodeHttp from "node:http";

export interface HttpResult {
  status: number;
  headers: Headers;
  text: string;
}

/** Sends one request and reads the whole body. */
export async function http(
  base: string,
  method: string,
  path: string,
  opts: { body?: string; headers?: Record<string, string> } = {},
): Promise<HttpResult> {
  const res = await fetch(base + path, { method, body: opts.body, headers: opts.headers });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** GET and parse the JSON array body (asserting it is valid JSON). */
export async function getJson(
  base: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; entries: Array<Record<string, unknown>>; text: string }> {
  const r = await http(base, "GET", path, { headers });
  return { status: r.status, entries: JSON.parse(r.text) as Array<Record<string, unknown>>, text: r.text };
}

/** A live SSE connection read with fetch's streaming body. */
export interface SseClient {
  /** Waits for the next `n` events. */
  next(n?: number, timeoutMs?: number): Promise<Array<{ event: string; data: string }>>;
  close(): void;
}

/**
 * Reads an SSE response's body block by block (the text before each blank line), until it ends
 * or is aborted.
 */
export async function forEachSseBlock(res: Response, onBlock: (block: string) => void): Promise<void> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      for (let i = buf.indexOf("\n\n"); i !== -1; i = buf.indexOf("\n\n")) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        onBlock(block);
      }
    }
  } catch {
    /* aborted */
  }
}

/** One SSE line's field and value (a comment line, `:…`, has the field ""). */
export function sseField(line: string): { field: string; value: string } {
  const c = line.indexOf(":");
  return {
    field: c === -1 ? line : line.slice(0, c),
    value: c === -1 ? "" : line.slice(c + 1).replace(/^ /, ""),
  };
}

/** Opens an SSE stream (resolves once the response headers arrived, i.e. the subscription exists). */
export async function openSse(
  url: string,
  headers: Record<string, string> = {},
): Promise<SseClient & { status: number; headers: Headers }> {
  const ac = new AbortController();
  const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: ac.signal });
  const queue: Array<{ event: string; data: string }> = [];
  let wake: (() => void) | undefined;
  void forEachSseBlock(res, (block) => {
    let event = "message";
    const data: string[] = [];
    for (const line of block.split("\n")) {
      const { field, value } = sseField(line);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    if (data.length > 0) queue.push({ event, data: data.join("\n") });
    wake?.();
  });
  return {
    status: res.status,
    headers: res.headers,
    async next(n = 1, timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      while (queue.length < n) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`expected ${n} SSE events, got ${queue.length}`);
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, Math.min(left, 100));
        });
      }
      return queue.splice(0, n);
    },
    close() {
      ac.abort();
    },
  };
}

/**
 * Sends a request with a raw path and exactly the given headers, and reads the whole answer
 * (fetch would normalize the path, and add or normalize headers).
 */
export function rawRequest(
  base: string,
  method: string,
  path: string,
  body?: string | Buffer,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = nodeHttp.request({ host: u.hostname, port: u.port, method, path, headers }, (res) => {
      let text = "";
      res
        .setEncoding("utf8")
        .on("data", (d: string) => (text += d))
        .on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** A GET with a body (fetch refuses to send one; curl and Node's http do). */
export function getWithBody(
  base: string,
  path: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = nodeHttp.request(
      `${base}${path}`,
      { method: "GET", headers: { ...headers, "content-length": Buffer.byteLength(body) } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => {
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") h.set(k, v);
          resolve({ status: res.statusCode ?? 0, headers: h, text });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** A REST value of encoding `zenoh/bytes` (what zenoh clients send by default), which REST renders as base64. */
export function bytesValue(v: unknown): string {
  return Buffer.from(String(v), "base64").toString("utf8");
}

/** GETs `url` and parses its JSON answer (undefined when empty). */
export async function restGet(url: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url);
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
}
