import { KeTrie } from "../keyexpr/index.js";
import { Encoding } from "./encoding.js";
import { errorMessage } from "./errors.js";
import type { Logger } from "./log.js";
import { makeSample, type Sample } from "./sample.js";

const EMPTY = Buffer.alloc(0);

/** A liveliness subscriber as the index holds it. */
interface LivelinessSubscriberDecl {
  readonly key: string;
  readonly handler: (sample: Sample) => void;
}

/**
 * Liveliness (Zenoh 1.x): a token says "I am alive" on a key for as long as it is declared; its
 * session closing undeclares it. Liveliness subscribers see a PUT when a key becomes alive and a
 * DELETE when its last token goes; a liveliness get lists the alive keys. Samples carry an empty
 * payload, no encoding and no timestamp. This router's tokens only (see docs/remote-api.md).
 */
export class Liveliness {
  /** Alive keys with the number of tokens holding each (several sessions may declare one key). */
  private readonly alive = new Map<string, number>();
  private readonly aliveIndex = new KeTrie<string>();
  private readonly subscribers = new KeTrie<LivelinessSubscriberDecl>();

  constructor(private readonly logger: Logger) {}

  /** @internal declares one token on a canonical key. */
  addToken(key: string): void {
    const n = this.alive.get(key) ?? 0;
    this.alive.set(key, n + 1);
    if (n === 0) {
      this.aliveIndex.add(key, key);
      this.notify(makeSample(key, "put", EMPTY, Encoding.EMPTY));
    }
  }

  /** @internal undeclares one token on `key`. */
  removeToken(key: string): void {
    const n = this.alive.get(key);
    if (n === undefined) return;
    if (n > 1) {
      this.alive.set(key, n - 1);
      return;
    }
    this.alive.delete(key);
    this.aliveIndex.delete(key, key);
    this.notify(makeSample(key, "delete", EMPTY, Encoding.EMPTY));
  }

  /** @internal adds a subscriber; with `history`, it first gets a PUT for each alive matching key. */
  addSubscriber(key: string, handler: (sample: Sample) => void, history: boolean): () => void {
    const decl: LivelinessSubscriberDecl = { key, handler };
    if (history) for (const k of this.aliveKeys(key)) this.call(decl, makeSample(k, "put", EMPTY, Encoding.EMPTY));
    this.subscribers.add(key, decl);
    return () => void this.subscribers.delete(key, decl);
  }

  /** Alive keys intersecting `keyexpr`, sorted. */
  aliveKeys(keyexpr: string): string[] {
    return [...new Set(this.aliveIndex.intersecting(keyexpr))].sort();
  }

  private notify(sample: Sample): void {
    for (const s of this.subscribers.intersecting(sample.key)) this.call(s, sample);
  }

  private call(decl: LivelinessSubscriberDecl, sample: Sample): void {
    try {
      decl.handler(sample);
    } catch (err) {
      this.logger.error({ key: sample.key, subscriber: decl.key, err: errorMessage(err) }, "liveliness subscriber failed");
    }
  }
}
