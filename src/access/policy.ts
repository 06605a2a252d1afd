/**
 * The compiled access-control policy (docs/security.md). Rules are compiled once into one
 * key-expression trie per (message, permission), each declared key expression holding the
 * subjects the rule applies to through the policies. A decision walks two or four tries:
 * O(key depth), whatever the number of rules.
 *
 * Decision, for a principal P, a message M and a key expression K (zenoh 1.x's order, extended
 * to wildcard expressions):
 * 1. a deny rule of P for M that includes K: deny;
 * 2. K is a plain key: allow when the default is allow or an allow rule of P includes K, else deny;
 * 3. K is wild: with default allow, partial when a deny rule of P intersects K, else allow;
 *    with default deny, allow when an allow rule includes K and no deny rule intersects it,
 *    partial when some allow rule intersects K, else deny.
 * `partial` means some keys K matches are allowed and some are not: reads are filtered key by
 * key, writes are refused whole.
 */
import { BlockList, isIP } from "node:net";
import { canonize, isWild, KeTrie } from "../keyexpr/index.js";
import { interfacesOf } from "./interfaces.js";
import { type AccessControlConfig, type LinkProtocol, MESSAGES, type Message } from "./schema.js";

export type Decision = "allow" | "deny" | "partial";

/** The subjects a rule applies to, shared by every key expression of the rule. */
interface RuleSubjects {
  readonly subjects: Uint32Array;
}

interface MessageTries {
  readonly allow: KeTrie<RuleSubjects>;
  readonly deny: KeTrie<RuleSubjects>;
}

interface CompiledSubject {
  readonly usernames: ReadonlySet<string> | undefined;
  readonly cidrs: BlockList | undefined;
  readonly zids: ReadonlySet<string> | undefined;
  readonly protocols: ReadonlySet<LinkProtocol> | undefined;
  readonly interfaces: ReadonlySet<string> | undefined;
}

/** Who a client is, as the subjects see it. */
export interface Identity {
  readonly user: string | undefined;
  /** The client's address (normalized). */
  readonly address: string;
  /** The local address its connection arrived on (for `interfaces`). */
  readonly localAddress?: string | undefined;
  /** The link it came over (for `link_protocols`); none for REST. */
  readonly protocol?: LinkProtocol | undefined;
  /** Its zenoh session id (for `zids`); only zenoh-door sessions have one. */
  readonly zid?: string | undefined;
}

/** A zid as zenoh prints it: lowercase hex without leading zeros. */
export function normalizeZid(zid: string): string {
  const s = zid.toLowerCase().replace(/^0+/, "");
  return s === "" ? "0" : s;
}

export class Policy {
  readonly defaultAllow: boolean;
  /** True when some subject names link properties (zids, link protocols, interfaces). */
  readonly usesLinks: boolean;
  readonly #tries = new Map<Message, MessageTries>();
  readonly #subjects: CompiledSubject[] = [];
  /** 1 for each subject some allow rule applies to. */
  readonly #granting: Uint8Array;

  /** Throws an Error with a one-line reason for a bad reference, key expression or range. */
  constructor(config: AccessControlConfig) {
    this.defaultAllow = config.default_permission === "allow";
    const subjectIndex = new Map<string, number>();
    for (const s of config.subjects) {
      if (subjectIndex.has(s.id)) throw new Error(`access_control.subjects: id "${s.id}" is used twice`);
      subjectIndex.set(s.id, this.#subjects.length);
      this.#subjects.push({
        usernames: s.usernames && new Set(s.usernames),
        cidrs: s.cidrs && compileCidrs(s.id, s.cidrs),
        zids: s.zids && new Set(s.zids.map(normalizeZid)),
        protocols: s.link_protocols && new Set(s.link_protocols),
        interfaces: s.interfaces && new Set(s.interfaces),
      });
    }
    this.usesLinks = this.#subjects.some(
      (s) => s.zids !== undefined || s.protocols !== undefined || s.interfaces !== undefined,
    );
    const ruleIds = new Set<string>();
    for (const r of config.rules) {
      if (ruleIds.has(r.id)) throw new Error(`access_control.rules: id "${r.id}" is used twice`);
      ruleIds.add(r.id);
    }
    const ruleSubjects = new Map<string, Set<number>>();
    for (const [i, p] of config.policies.entries()) {
      const where = `access_control.policies[${p.id ?? i}]`;
      const subjects: number[] = [];
      for (const s of p.subjects) {
        const idx = subjectIndex.get(s);
        if (idx === undefined) throw new Error(`${where}: no subject has id "${s}"`);
        subjects.push(idx);
      }
      for (const r of p.rules) {
        if (!ruleIds.has(r)) throw new Error(`${where}: no rule has id "${r}"`);
        let set = ruleSubjects.get(r);
        if (set === undefined) {
          set = new Set();
          ruleSubjects.set(r, set);
        }
        for (const s of subjects) set.add(s);
      }
    }
    for (const m of MESSAGES) this.#tries.set(m, { allow: new KeTrie(), deny: new KeTrie() });
    this.#granting = new Uint8Array(this.#subjects.length);
    for (const r of config.rules) {
      const subjects = ruleSubjects.get(r.id);
      if (subjects === undefined || subjects.size === 0) continue; // a rule no policy uses applies to no one
      if (r.permission === "allow") for (const s of subjects) this.#granting[s] = 1;
      const value: RuleSubjects = { subjects: Uint32Array.from(subjects) };
      for (const raw of r.key_exprs) {
        let ke: string;
        try {
          ke = canonize(raw);
        } catch (err) {
          throw new Error(`access_control.rules "${r.id}": ${(err as Error).message}`);
        }
        for (const m of r.messages) this.#tries.get(m)![r.permission].add(ke, value);
      }
    }
  }

  /** Which subjects a client matches: a subject matches when every property it lists does. */
  subjectsOf(who: Identity): Uint8Array {
    const { user, address } = who;
    const out = new Uint8Array(this.#subjects.length);
    const family = isIP(address) === 6 ? "ipv6" : "ipv4";
    const zid = who.zid === undefined ? undefined : normalizeZid(who.zid);
    const interfaces = this.usesLinks ? interfacesOf(who.localAddress) : [];
    for (const [i, s] of this.#subjects.entries()) {
      if (s.usernames !== undefined && (user === undefined || !s.usernames.has(user))) continue;
      if (s.cidrs !== undefined && (address === "" || !s.cidrs.check(address, family))) continue;
      if (s.zids !== undefined && (zid === undefined || !s.zids.has(zid))) continue;
      if (s.protocols !== undefined && (who.protocol === undefined || !s.protocols.has(who.protocol))) continue;
      if (s.interfaces !== undefined && !interfaces.some((n) => s.interfaces!.has(n))) continue;
      out[i] = 1;
    }
    return out;
  }

  /** True when some allow rule applies to a client with `subjects` (or the default allows). */
  grantsAnything(subjects: Uint8Array): boolean {
    if (this.defaultAllow) return true;
    for (let i = 0; i < subjects.length; i++) if (subjects[i] === 1 && this.#granting[i] === 1) return true;
    return false;
  }

  /** The decision for a client with `subjects` sending `message` on the canonical `ke`. */
  decide(subjects: Uint8Array, message: Message, ke: string): Decision {
    const t = this.#tries.get(message)!;
    const deny = t.deny.size > 0;
    if (deny && applies(t.deny.including(ke), subjects)) return "deny";
    if (!isWild(ke)) {
      if (this.defaultAllow) return "allow";
      return t.allow.size > 0 && applies(t.allow.including(ke), subjects) ? "allow" : "deny";
    }
    const denyTouches = deny && applies(t.deny.intersecting(ke), subjects);
    if (this.defaultAllow) return denyTouches ? "partial" : "allow";
    if (t.allow.size === 0) return "deny";
    if (!denyTouches && applies(t.allow.including(ke), subjects)) return "allow";
    return applies(t.allow.intersecting(ke), subjects) ? "partial" : "deny";
  }
}

function applies(rules: readonly RuleSubjects[], subjects: Uint8Array): boolean {
  for (const r of rules) for (const s of r.subjects) if (subjects[s] === 1) return true;
  return false;
}

function compileCidrs(id: string, cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const c of cidrs) {
    const slash = c.indexOf("/");
    const addr = slash === -1 ? c : c.slice(0, slash);
    const family = isIP(addr);
    const prefix = slash === -1 ? (family === 6 ? 128 : 32) : Number(c.slice(slash + 1));
    if (family === 0 || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 6 ? 128 : 32)) {
      throw new Error(`access_control.subjects "${id}": "${c}" is not an address range (e.g. 10.0.0.0/8, ::1/128)`);
    }
    list.addSubnet(addr, prefix, family === 6 ? "ipv6" : "ipv4");
  }
  return list;
}
