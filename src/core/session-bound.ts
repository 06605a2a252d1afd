/**
 * Values bound to the writer's zenoh session (docs/ttl-and-leases.md, "Session-bound values"):
 * the lifetime a put from a zenoh client (either zenoh door) asks for. Two conventions, one outcome (`sessionBound` on the core
 * put, whose lease ends when the session closes or its lease times out):
 *
 * - a `zest:` attachment (`zest:session`, `zest:ttl=30s`, ...), parsed by `attachedLifetime`,
 *   the same parser the remote API uses;
 * - the router's `session_bound.key_exprs`: a put on a key they include is bound to its
 *   session, for clients that cannot choose their attachment (zenoh-pico's example programs).
 *
 * The section's schema is the root's (config/schema.ts); the edge policy holds the keys.
 */
import { canonize, isWild, KeTrie } from "../keyexpr/index.js";
import { type AttachedLifetime, attachedLifetime } from "./lifetime.js";

/** What `putLifetime` answers for a put bound by its key (its attachment, user data, is kept). */
export const BOUND_BY_KEY: AttachedLifetime = Object.freeze({ sessionBound: true });

/** The key expressions whose puts are bound to the writer's session. */
export class SessionBoundKeys {
  readonly #trie = new KeTrie<true>();

  /** Throws an Error naming the key expression that does not parse. */
  constructor(keyExprs: readonly string[]) {
    for (const raw of keyExprs) {
      try {
        this.#trie.add(canonize(raw), true);
      } catch (err) {
        throw new Error(`session_bound.key_exprs: ${JSON.stringify(raw.slice(0, 64))}: ${(err as Error).message}`);
      }
    }
  }

  /** True when none is listed (the PUSH path then asks nothing). */
  get empty(): boolean {
    return this.#trie.size === 0;
  }

  /** True when a put on the plain key `key` is bound to its session. */
  bound(key: string): boolean {
    return !isWild(key) && this.#trie.including(key).length > 0;
  }
}

/**
 * The lifetime a zenoh put on `key` asks: its `zest:` attachment's when it has one, else bound to
 * the session when `keys` include `key`, else none. Throws `bad_input` for a malformed `zest:`
 * attachment (the put is then refused, as on the remote API).
 */
export function putLifetime(
  key: string,
  attachment: Uint8Array | undefined,
  keys: SessionBoundKeys | undefined,
): AttachedLifetime | undefined {
  const attached = attachedLifetime(attachment);
  if (attached !== undefined) return attached;
  return keys !== undefined && !keys.empty && keys.bound(key) ? BOUND_BY_KEY : undefined;
}
