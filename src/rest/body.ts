/**
 * Request bodies (docs/rest-gateway.md): read whole up to a limit, a refused one drained before
 * its 413 so the client sees the answer, and a stalled one dropped by `BodyWatch`.
 */
import { Buffer } from "node:buffer";
import type { IncomingMessage } from "node:http";
import { ZestError } from "../core/errors.js";

/**
 * A refused body up to this size is still read (and dropped) before the 413 is sent: closing a
 * connection on a client that is still sending resets it, and the client may lose the answer.
 */
const DRAIN_LIMIT = 64 * 1024 * 1024;
/** How long a refused body may take to drain before the connection is closed anyway. */
const DRAIN_TIMEOUT_MS = 10_000;

/**
 * Drops the connection of a request whose body receives no byte for a while (the client is
 * stalled; there is nobody to answer). Almost every body is complete by the end of the event
 * loop turn in which its request arrived, so a write costs one array push: once per turn the
 * requests still incomplete are handed to a per-period sweep, which compares their socket byte
 * counts. Nothing is held past the turn (held requests would age into the old generation and
 * make garbage collection dearer), and there is no timer per request.
 */
export class BodyWatch {
  private pending: IncomingMessage[] = [];
  private scheduled = false;
  /** Slow bodies: socket bytes read at the last sweep, and the tick they last changed. */
  private readonly slow = new Map<IncomingMessage, { bytes: number; since: number }>();
  private tick = 0;
  private readonly idleTicks: number;
  private readonly timer: NodeJS.Timeout;

  constructor(idleMs: number) {
    const period = Math.min(1000, Math.max(50, Math.floor(idleMs / 4)));
    this.idleTicks = Math.ceil(idleMs / period);
    this.timer = setInterval(() => this.sweep(), period);
    this.timer.unref();
  }

  /** Watches `req` until its body is complete. */
  add(req: IncomingMessage): void {
    this.pending.push(req);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    for (const req of this.pending) {
      if (!req.complete && !req.destroyed) this.slow.set(req, { bytes: req.socket.bytesRead, since: this.tick });
    }
    this.pending = [];
  };

  private sweep(): void {
    const now = ++this.tick;
    for (const [req, w] of this.slow) {
      if (req.complete || req.destroyed) this.slow.delete(req);
      else if (req.socket.bytesRead !== w.bytes) {
        w.bytes = req.socket.bytesRead;
        w.since = now;
      } else if (now - w.since > this.idleTicks) {
        this.slow.delete(req);
        req.socket.destroy();
      }
    }
  }

  /** Stops the sweep and forgets every watched request. */
  close(): void {
    clearInterval(this.timer);
    this.pending = [];
    this.slow.clear();
  }
}

/**
 * Reads the whole body, refusing (413) more than `limit` bytes before buffering them. Calls `done`
 * once. While the body is read, `watch` drops the connection if it stalls.
 */
export function readBody(
  req: IncomingMessage,
  limit: number,
  watch: BodyWatch,
  done: (err: ZestError | undefined, body?: Buffer) => void,
): void {
  if (!req.complete) watch.add(req);
  readBodyNow(req, limit, done);
}

/** `readBody` as a promise, for the read pipeline (a GET body is a query payload). */
export function readBodyAsync(req: IncomingMessage, limit: number, watch: BodyWatch): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    readBody(req, limit, watch, (err, body) => (err ? reject(err) : resolve(body!))),
  );
}

function readBodyNow(
  req: IncomingMessage,
  limit: number,
  done: (err: ZestError | undefined, body?: Buffer) => void,
): void {
  const declared = Number(req.headers["content-length"] ?? 0);
  const chunks: Buffer[] = [];
  let size = 0;
  let settled = false;
  const finish = (err: ZestError | undefined, body?: Buffer): void => {
    if (settled) return;
    settled = true;
    done(err, body);
  };
  const refuse = (err: ZestError): void => {
    settled = true; // the end of the body no longer resolves; only `answer` calls `done`
    req.off("data", onData);
    if (declared > DRAIN_LIMIT || size > DRAIN_LIMIT) {
      req.pause();
      done(err);
      return;
    }
    let drained = size;
    let answered = false;
    const answer = (): void => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      done(err);
    };
    const timer = setTimeout(answer, DRAIN_TIMEOUT_MS);
    req.on("data", (c: Buffer) => {
      drained += c.length;
      if (drained > DRAIN_LIMIT) {
        req.pause();
        answer();
      }
    });
    req.once("end", answer);
    req.once("error", answer);
    req.resume();
  };
  const onData = (c: Buffer): void => {
    size += c.length;
    if (size > limit) {
      refuse(ZestError.tooLarge(`request body exceeds the limit of ${limit} bytes`));
      return;
    }
    chunks.push(c);
  };
  if (declared > limit) {
    refuse(ZestError.tooLarge(`request body of ${declared} bytes exceeds the limit of ${limit} bytes`));
    return;
  }
  req.on("data", onData);
  // `on`, not `once`: `finish` runs its callback once anyway, and once-wrappers cost on every request.
  req.on("end", () => finish(undefined, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
  req.on("error", (err) => finish(ZestError.badRequest(`could not read the request body: ${err.message}`)));
}
