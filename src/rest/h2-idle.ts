/**
 * Idle HTTP/2 connections (docs/http2.md, "Idle connections"): a connection with no open stream
 * for `idleMs` is closed with GOAWAY, as HTTP/1.1's keep-alive timeout closes a connection between
 * requests. A parked long-poll or a quiet SSE stream is an open stream, so it is never cut by this.
 */
import type { EventEmitter } from "node:events";
import type { ServerHttp2Session, ServerHttp2Stream } from "node:http2";

/** The streams one session has open, and the timer that closes it once none is. */
class IdleSession {
  private open = 0;
  private readonly timer: NodeJS.Timeout;
  /** Bound once per session, so that a stream costs a listener and no closure of its own. */
  readonly onStreamClose = (): void => {
    if (--this.open === 0) this.timer.refresh();
  };

  constructor(
    private readonly session: ServerHttp2Session,
    idleMs: number,
  ) {
    // Never cleared while the session lives: it fires and does nothing when streams are open,
    // and `refresh` rearms it (even after it fired) when the last stream closes.
    this.timer = setTimeout(() => this.expire(), idleMs);
    this.timer.unref();
    session.once("close", () => clearTimeout(this.timer));
  }

  opened(): void {
    this.open++;
  }

  private expire(): void {
    if (this.open === 0 && !this.session.closed && !this.session.destroyed) this.session.close();
  }
}

function onStream(this: ServerHttp2Session, stream: ServerHttp2Stream): void {
  const idle = idleOf.get(this);
  if (idle === undefined) return;
  idle.opened();
  stream.once("close", idle.onStreamClose);
}

const idleOf = new WeakMap<ServerHttp2Session, IdleSession>();

/**
 * Closes the sessions of `server` (an `http2` server, secure or not) that hold no open stream for
 * `idleMs`; 0 turns it off.
 */
export function closeIdleSessions(server: EventEmitter, idleMs: number): void {
  if (idleMs <= 0) return;
  server.on("session", (session: ServerHttp2Session) => {
    idleOf.set(session, new IdleSession(session, idleMs));
    session.on("stream", onStream);
  });
}
