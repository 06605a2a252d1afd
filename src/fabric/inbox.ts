/**
 * Everything addressed back to this router travels on one subscription, `zest.in.<me>.>`. The
 * reply subjects are typed here, built by `subject` and read back by `parse`, so no part of the
 * fabric spells or splits them by hand. Layout in docs/fabric-protocol.md.
 */
import type { Transport, TransportMessage, TransportSubscription } from "./transport.js";

/** Subject prefix of the inboxes. */
export const INBOX_PREFIX = "zest.in";

/** Where an answer is addressed, by what it answers. */
export type InboxAddress =
  /** "No responders" notices for sample `seq`, sent to the subscribers of its key (or to router `zid` alone). */
  | { readonly kind: "sample"; readonly seq: number; readonly zid?: string }
  /** "No responders" notices for the samples batched under `id` (see `NatsFabric`). */
  | { readonly kind: "batch"; readonly id: number }
  /** Acknowledgement batches, from any router. */
  | { readonly kind: "acks" }
  /** Replies of router `zid` to query `qid`. */
  | { readonly kind: "replies"; readonly qid: number; readonly zid: string }
  /** Answers to our hello. */
  | { readonly kind: "hello" }
  /** Router `zid`'s declarations, answering our request. */
  | { readonly kind: "declarations"; readonly zid: string }
  /** Router `zid`'s answer to a ping. */
  | { readonly kind: "pong"; readonly zid: string };

type Kind = InboxAddress["kind"];
type AddressOf<K extends Kind> = Extract<InboxAddress, { kind: K }>;

/** One handler per address kind. */
export type InboxHandlers = { readonly [K in Kind]: (address: AddressOf<K>, msg: TransportMessage) => void };

const TAGS: Record<Kind, string> = {
  sample: "a",
  batch: "b",
  acks: "k",
  replies: "r",
  hello: "h",
  declarations: "d",
  pong: "p",
};
const ID = /^(0|[1-9][0-9]{0,15})$/;
const ZID = /^[0-9A-F]{2,32}$/;

/**
 * The router whose inbox `subject` is in (`zest.in.<zid>.…`), or undefined for any other subject:
 * who sent a query, read off the reply subject it asked the answers on.
 */
export function inboxOwner(subject: string): string | undefined {
  if (!subject.startsWith(`${INBOX_PREFIX}.`)) return undefined;
  const start = INBOX_PREFIX.length + 1;
  const end = subject.indexOf(".", start);
  const zid = end < 0 ? undefined : subject.slice(start, end);
  return zid !== undefined && ZID.test(zid) ? zid : undefined;
}

/** The inbox of router `zid`. */
export class Inbox {
  /** `zest.in.<zid>`. */
  readonly prefix: string;
  private readonly ackSubjects = new Map<string, string>();

  constructor(readonly zid: string) {
    this.prefix = `${INBOX_PREFIX}.${zid}`;
  }

  /** The reply subject for `address` in this inbox. */
  subject(address: InboxAddress): string {
    const tag = TAGS[address.kind];
    switch (address.kind) {
      case "sample":
        return address.zid === undefined
          ? `${this.prefix}.${tag}.${address.seq}`
          : `${this.prefix}.${tag}.${address.seq}.${address.zid}`;
      case "batch":
        return `${this.prefix}.${tag}.${address.id}`;
      case "replies":
        return `${this.prefix}.${tag}.${address.qid}.${address.zid}`;
      case "declarations":
      case "pong":
        return `${this.prefix}.${tag}.${address.zid}`;
      default:
        return `${this.prefix}.${tag}`;
    }
  }

  /** The subject router `zid` receives acknowledgement batches on. */
  acksSubjectOf(zid: string): string {
    let s = this.ackSubjects.get(zid);
    if (s === undefined) {
      s = `${INBOX_PREFIX}.${zid}.${TAGS.acks}`;
      if (this.ackSubjects.size > 4096) this.ackSubjects.clear();
      this.ackSubjects.set(zid, s);
    }
    return s;
  }

  /** The address a subject of this inbox stands for, or undefined for anything else. */
  parse(subject: string): InboxAddress | undefined {
    if (!subject.startsWith(this.prefix) || subject.charCodeAt(this.prefix.length) !== 0x2e) return undefined;
    // Replies are the inbox's most frequent messages (one per query and router): read without a split.
    if (subject.charCodeAt(this.prefix.length + 1) === 0x72 && subject.charCodeAt(this.prefix.length + 2) === 0x2e)
      return this.parseReplies(subject, this.prefix.length + 3);
    const parts = subject.slice(this.prefix.length + 1).split(".");
    const [tag, a, b] = parts;
    const id = (s: string | undefined): number | undefined => (s !== undefined && ID.test(s) ? Number(s) : undefined);
    const zid = (s: string | undefined): string | undefined => (s !== undefined && ZID.test(s) ? s : undefined);
    switch (tag) {
      case TAGS.sample: {
        const seq = id(a);
        if (seq === undefined || parts.length > 3) return undefined;
        if (parts.length === 2) return { kind: "sample", seq };
        const z = zid(b);
        return z === undefined ? undefined : { kind: "sample", seq, zid: z };
      }
      case TAGS.batch: {
        const n = id(a);
        return n === undefined || parts.length !== 2 ? undefined : { kind: "batch", id: n };
      }
      case TAGS.acks:
        return parts.length === 1 ? { kind: "acks" } : undefined;
      case TAGS.replies: {
        const qid = id(a);
        const z = zid(b);
        return qid === undefined || z === undefined || parts.length !== 3
          ? undefined
          : { kind: "replies", qid, zid: z };
      }
      case TAGS.hello:
        return parts.length === 1 ? { kind: "hello" } : undefined;
      case TAGS.declarations:
      case TAGS.pong: {
        const z = zid(a);
        if (z === undefined || parts.length !== 2) return undefined;
        return tag === TAGS.pong ? { kind: "pong", zid: z } : { kind: "declarations", zid: z };
      }
      default:
        return undefined;
    }
  }

  /** `<qid>.<zid>` from `start` on, as `parse` reads it for the replies tag. */
  private parseReplies(subject: string, start: number): InboxAddress | undefined {
    const dot = subject.indexOf(".", start);
    if (dot === -1) return undefined;
    const qid = subject.slice(start, dot);
    const zid = subject.slice(dot + 1);
    return ID.test(qid) && ZID.test(zid) ? { kind: "replies", qid: Number(qid), zid } : undefined;
  }

  /** Subscribes to the whole inbox and hands each message to the handler of its address. */
  listen(transport: Transport, handlers: InboxHandlers, onUnknown: (subject: string) => void): TransportSubscription {
    return transport.subscribe(`${this.prefix}.>`, (msg) => {
      const address = this.parse(msg.subject);
      if (address === undefined) {
        onUnknown(msg.subject);
        return;
      }
      (handlers[address.kind] as (a: InboxAddress, m: TransportMessage) => void)(address, msg);
    });
  }
}
