/**
 * The network interface a connection arrived on, for the `interfaces` subjects of access control
 * (docs/security.md): the interfaces holding the connection's local address. The host's table is
 * read at most once every few seconds, so an interface that comes up later is seen, and a
 * lookup on the request path is one Map read.
 */
import { networkInterfaces } from "node:os";

const REFRESH_MS = 5_000;
const NONE: readonly string[] = [];

let table = new Map<string, readonly string[]>();
let readAt = Number.NEGATIVE_INFINITY;

function refresh(now: number): void {
  const next = new Map<string, string[]>();
  for (const [name, addrs] of Object.entries(networkInterfaces())) {
    for (const a of addrs ?? []) {
      const list = next.get(a.address);
      if (list === undefined) next.set(a.address, [name]);
      else if (!list.includes(name)) list.push(name);
    }
  }
  table = next;
  readAt = now;
}

/** The names of the interfaces holding `localAddress` (IPv4-mapped IPv6 read as IPv4); none when unknown. */
export function interfacesOf(localAddress: string | undefined, now = Date.now()): readonly string[] {
  if (localAddress === undefined || localAddress === "") return NONE;
  if (now - readAt > REFRESH_MS) refresh(now);
  const address =
    localAddress.startsWith("::ffff:") && localAddress.includes(".") ? localAddress.slice(7) : localAddress;
  return table.get(address) ?? NONE;
}
