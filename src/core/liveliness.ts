import { Buffer } from "node:buffer";
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
 * payload, no encoding and no timestamp.
 *
 * Tokens are this router's and, through the fabric, other routers' (docs/remote-api.md): the
 * fabric announces this router's token keys (`localKeys`) and reports the others'
 * (`remoteChanged`); a router's tokens all go when it is forgotten.
 */
export class Liveliness {
  /** This router's tokens: key → number of tokens holding it (several sessions may declare one key). */
  private readonly local = new Map<string, number>();
  /** Other routers' tokens: key → the routers holding it. */
  private readonly remote = new Map<string, Set<string>>();
  private readonly aliveIndex = new KeTrie<string>();
  private readonly subscribers = new KeTrie<LivelinessSubscriberDecl>();
  /** Called when the set of this router's token keys changes (`watchLocal`). */
  private readonly localWatchers = new Set<() => void>();

  /** `onLocalChange` runs when the set of this router's token keys changes (to re-announce it). */
  constructor(
    private readonly logger: Logger,
    private readonly onLocalChange: () => void = () => undefined,
  ) {}

  /** @internal declares one token on a canonical key. */
  addToken(key: string): void {
    const n = this.local.get(key) ?? 0;
    this.local.set(key, n + 1);
    if (n > 0) return;
    this.appeared(key);
    this.localChanged();
  }

  /** @internal undeclares one token on `key`. */
  removeToken(key: string): void {
    const n = this.local.get(key);
    if (n === undefined) return;
    if (n > 1) {
      this.local.set(key, n - 1);
      return;
    }
    this.local.delete(key);
    this.disappeared(key);
    this.localChanged();
  }

  /**
   * Calls `watcher` whenever the set of this router's token keys changes, even when a key stays
   * alive through another router (no liveliness sample then); returns its remover.
   */
  watchLocal(watcher: () => void): () => void {
    this.localWatchers.add(watcher);
    return () => void this.localWatchers.delete(watcher);
  }

  private localChanged(): void {
    this.onLocalChange();
    for (const w of this.localWatchers) w();
  }

  /** Keys of this router's tokens, deduplicated (what the fabric announces). */
  localKeys(): string[] {
    return [...this.local.keys()];
  }

  /** @internal router `zid` now holds tokens on `added` and no longer on `removed`. */
  remoteChanged(zid: string, added: readonly string[], removed: readonly string[]): void {
    for (const key of removed) {
      const holders = this.remote.get(key);
      if (!holders?.delete(zid)) continue;
      if (holders.size > 0) continue;
      this.remote.delete(key);
      this.disappeared(key);
    }
    for (const key of added) {
      let holders = this.remote.get(key);
      if (holders === undefined) {
        holders = new Set();
        this.remote.set(key, holders);
      }
      if (holders.has(zid)) continue;
      holders.add(zid);
      if (holders.size === 1) this.appeared(key);
    }
  }

  /** @internal adds a subscriber; with `history`, it first gets a PUT for each alive matching key. */
  addSubscriber(key: string, handler: (sample: Sample) => void, history: boolean): () => void {
    const decl: LivelinessSubscriberDecl = { key, handler };
    if (history) for (const k of this.aliveKeys(key)) this.call(decl, makeSample(k, "put", EMPTY, Encoding.EMPTY));
    this.subscribers.add(key, decl);
    return () => void this.subscribers.delete(key, decl);
  }

  /** Alive keys intersecting `keyexpr` (here or on another router), sorted. */
  aliveKeys(keyexpr: string): string[] {
    return [...new Set(this.aliveIndex.intersecting(keyexpr))].sort();
  }

  /** A key gained a holder: a PUT when it was not alive before (held neither here nor elsewhere). */
  private appeared(key: string): void {
    const holders = (this.local.has(key) ? 1 : 0) + (this.remote.get(key)?.size ?? 0);
    if (holders !== 1) return;
    this.aliveIndex.add(key, key);
    this.notify(makeSample(key, "put", EMPTY, Encoding.EMPTY));
  }

  /** A key lost a holder: a DELETE when none is left. */
  private disappeared(key: string): void {
    if (this.local.has(key) || this.remote.has(key)) return;
    this.aliveIndex.delete(key, key);
    this.notify(makeSample(key, "delete", EMPTY, Encoding.EMPTY));
  }

  private notify(sample: Sample): void {
    for (const s of this.subscribers.intersecting(sample.key)) this.call(s, sample);
  }

  private call(decl: LivelinessSubscriberDecl, sample: Sample): void {
    try {
      decl.handler(sample);
    } catch (err) {
      this.logger.error(
        { key: sample.key, subscriber: decl.key, err: errorMessage(err) },
        "liveliness subscriber failed",
      );
    }
  }
}
