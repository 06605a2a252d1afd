/**
 * The answers to one zenoh session's INTERESTs (docs/zenoh-protocol.md, "INTEREST"): the
 * subscribers, queryables and liveliness tokens the router knows that match, declared to the
 * client now (current) and as they come and go (future), under ids of the router's own
 * numbering. A part only the wire protocol has; what the client may see is its face's to say.
 */
import type { Connectivity } from "../core/ports.js";
import type { MatchingListener } from "../core/matching.js";
import type { Session } from "../core/session.js";
import type { Face } from "../door/face.js";
import type { Declaration } from "./codec/declarations.js";
import { type InterestMsg, InterestOption } from "./codec/network.js";
import { declarationOf, InterestDeclarations, matchingNow } from "./interest-declarations.js";

export class Interests {
  /** The future part of each INTEREST, by the client's id: what stops it. */
  readonly #watches = new Map<number, () => void>();
  /** Declaration ids the router gives in its answers. */
  private nextDeclId = 0;
  private closed = false;

  constructor(
    private readonly face: Face,
    private readonly session: Session,
    private readonly connectivity: Connectivity,
    /** Sends one DECLARE to the client (with the INTEREST id it answers, for a current answer). */
    private readonly send: (decl: Declaration, interestId?: number) => void,
  ) {}

  /** INTERESTs followed now (they count as declarations). */
  get size(): number {
    return this.#watches.size;
  }

  /** Answers INTEREST `m` on the canonical `key` (`**` when it names none). */
  open(m: InterestMsg, key: string): void {
    const restricted = m.key !== undefined;
    const aggregate = restricted && (m.options & InterestOption.AGGREGATE) !== 0;
    const stops: Array<() => void> = [];
    const interestId = m.current ? m.id : undefined;
    if ((m.options & InterestOption.SUBSCRIBERS) !== 0)
      stops.push(...this.answerDeclarations("subscribers", key, aggregate, interestId, m.future));
    if ((m.options & InterestOption.QUERYABLES) !== 0)
      stops.push(...this.answerDeclarations("queryables", key, aggregate, interestId, m.future));
    if ((m.options & InterestOption.TOKENS) !== 0) stops.push(...this.answerTokens(key, interestId, m.future));
    if (m.current) this.send({ kind: "final" }, m.id);
    if (m.future) {
      this.stop(m.id);
      this.#watches.set(m.id, () => {
        for (const stop of stops) stop();
      });
    }
  }

  /** A refused INTEREST's current part ends at once, empty. */
  refuse(id: number): void {
    this.send({ kind: "final" }, id);
  }

  /** Stops following INTEREST `id` (its final, or a new one under the same id). */
  stop(id: number): void {
    this.#watches.get(id)?.();
    this.#watches.delete(id);
  }

  /** Stops every INTEREST (the session is gone). */
  close(): void {
    this.closed = true;
    for (const stop of this.#watches.values()) stop();
    this.#watches.clear();
  }

  /**
   * Declares the subscribers (or queryables) matching `key` that are not this peer's own: one
   * declaration of `key` itself when aggregated (what a client's publisher or querier asks, to
   * know whether anyone listens), each key otherwise. With `future`, keeps declaring and
   * undeclaring as they come and go; returns the function that stops that.
   */
  private answerDeclarations(
    kind: "subscribers" | "queryables",
    key: string,
    aggregate: boolean,
    interestId: number | undefined,
    future: boolean,
  ): Array<() => void> {
    const now = () => matchingNow(this.session, kind, key, aggregate);
    const declared = new InterestDeclarations(() => ++this.nextDeclId);
    const sync = (interest: number | undefined): void => {
      for (const c of declared.update(now()))
        this.send(declarationOf(kind, c), c.kind === "declare" ? interest : undefined);
    };
    if (interestId !== undefined) sync(interestId);
    // Future only: what exists now is not announced, but its later removal must not be either.
    else if (future) declared.assume(now());
    if (!future) return [];
    let scheduled = false;
    const queueSync = (): void => {
      if (scheduled) return;
      scheduled = true;
      queueMicrotask(() => {
        scheduled = false;
        if (!this.closed) sync(undefined);
      });
    };
    // Aggregated subscribers follow matching flips; everything else every declaration change
    // (a queryable's completeness too: the same id is declared again with its new info).
    if (aggregate && kind === "subscribers") {
      const listener: MatchingListener = this.session.declareMatchingListener(key, kind, () => sync(undefined), {
        allowedDestination: "remote",
      });
      return [() => listener.undeclare()];
    }
    return [this.connectivity.onChange(() => queueSync())];
  }

  /** Declares the live tokens matching `key` (not this peer's own); with `future`, follows them. */
  private answerTokens(key: string, interestId: number | undefined, future: boolean): Array<() => void> {
    const ids = new Map<string, number>();
    if (interestId !== undefined) {
      for (const s of this.session.livelinessGet(key)) {
        if (this.face.ownsToken(s.key) || !this.face.allows("liveliness_query", s.key)) continue;
        const id = ++this.nextDeclId;
        ids.set(s.key, id);
        this.send({ kind: "token", id, key: { scope: 0, suffix: s.key, senderMapping: false } }, interestId);
      }
    }
    if (!future) return [];
    const sub = this.session.declareLivelinessSubscriber(key, (s) => {
      if (this.face.ownsToken(s.key) || !this.face.allows("declare_liveliness_subscriber", s.key)) return;
      if (s.kind === "put") {
        if (ids.has(s.key)) return;
        const id = ++this.nextDeclId;
        ids.set(s.key, id);
        this.send({ kind: "token", id, key: { scope: 0, suffix: s.key, senderMapping: false } });
      } else {
        // A token older than a future-only interest was never declared to the client: zenohd
        // still tells it the token went, under the one-shot id 0 with the key beside it.
        const id = ids.get(s.key) ?? 0;
        ids.delete(s.key);
        this.send({ kind: "untoken", id, key: { scope: 0, suffix: s.key, senderMapping: false } });
      }
    });
    return [() => sub.undeclare()];
  }
}
