/**
 * Where scouting answers, and what a HELLO lists: interface addresses from the listener's
 * addresses or from `scouting.multicast.interface`, and locators with their unspecified host
 * (`0.0.0.0`, `[::]`) spelled out per interface address, as zenoh lists them.
 */
import { isIPv4, isIPv6 } from "node:net";
import { networkInterfaces } from "node:os";
import { ZestError } from "../../core/errors.js";

/** The IPv4 addresses of this host's interfaces, by interface name (as `os.networkInterfaces`). */
export type InterfaceTable = ReadonlyMap<string, readonly { address: string; family: "IPv4" | "IPv6" }[]>;

/** This host's interfaces now. */
export function hostInterfaces(): InterfaceTable {
  const out = new Map<string, { address: string; family: "IPv4" | "IPv6" }[]>();
  for (const [name, addrs] of Object.entries(networkInterfaces())) {
    out.set(
      name,
      (addrs ?? []).map((a) => ({ address: a.address, family: a.family })),
    );
  }
  return out;
}

function ipv4Of(table: InterfaceTable): string[] {
  const out: string[] = [];
  for (const addrs of table.values()) for (const a of addrs) if (a.family === "IPv4") out.push(a.address);
  return out;
}

function unbracket(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

/** True for 127.0.0.0/8 and ::1. */
export function isLoopback(address: string): boolean {
  return address.startsWith("127.") || address === "::1";
}

/**
 * The IPv4 interface addresses scouting joins the multicast group on and answers from.
 *
 * `auto` (zenohd's default name): where the zenoh listener is reachable. A listener on a
 * wildcard address (`0.0.0.0`, `::`) is reachable on every interface; one on an address, on that
 * address's interface; so a router in protected mode (listening on loopback) scouts on loopback
 * only. Otherwise `setting` names interfaces or addresses, comma-separated, as zenohd reads it
 * (`eth0`, `192.168.1.2`, `lo,eth0`). Throws a `bad_input` ZestError for an unknown interface.
 */
export function scoutingInterfaces(
  setting: string,
  listenerHosts: readonly string[],
  table: InterfaceTable = hostInterfaces(),
): string[] {
  const out = new Set<string>();
  if (setting.trim() === "auto") {
    for (const raw of listenerHosts) {
      const host = unbracket(raw);
      if (host === "0.0.0.0" || host === "::") for (const a of ipv4Of(table)) out.add(a);
      else if (isIPv4(host)) out.add(isLoopback(host) ? "127.0.0.1" : host);
      else if (host === "::1" || host === "localhost") out.add("127.0.0.1");
      // A listener on another IPv6 address is not reachable through an IPv4 group.
    }
    return [...out];
  }
  for (const part of setting.split(",")) {
    const name = part.trim();
    if (name === "") continue;
    if (isIPv4(name)) {
      out.add(name);
      continue;
    }
    if (isIPv6(name))
      throw new ZestError("bad_input", `scouting.multicast.interface: ${name} is IPv6; scouting uses an IPv4 group`);
    const v4 = table.get(name)?.find((a) => a.family === "IPv4");
    if (v4 === undefined) {
      throw new ZestError(
        "bad_input",
        `scouting.multicast.interface: no interface named ${JSON.stringify(name)} with an IPv4 address (known: ${[...table.keys()].join(", ")})`,
      );
    }
    out.add(v4.address);
  }
  return [...out];
}

/** `proto/host:port[?metadata]`, the host an IPv4 address, a name or a bracketed IPv6 address. */
const LOCATOR = /^([a-z0-9]+)\/(\[[^\]]*\]|[^:/]*):(\d+)(.*)$/;

/** The host of a locator (`tcp/127.0.0.1:7447` → `127.0.0.1`, `tcp/[::]:7447` → `::`), if it has one. */
export function locatorHost(locator: string): string | undefined {
  const m = LOCATOR.exec(locator);
  return m === null ? undefined : unbracket(m[2]!);
}

/**
 * The locators a HELLO lists for a scout from `peer`: a wildcard host is spelled out as each
 * interface address (IPv4 for `0.0.0.0`, both families for `[::]`, IPv6 link-local ones left
 * out); a scout from a non-loopback address is not sent loopback locators (as zenohd).
 */
export function helloLocators(
  locators: readonly string[],
  peer: string,
  table: InterfaceTable = hostInterfaces(),
): string[] {
  const remote = !isLoopback(peer);
  const out: string[] = [];
  for (const loc of locators) {
    const m = LOCATOR.exec(loc);
    if (m === null) {
      out.push(loc);
      continue;
    }
    const [, proto, host, port, rest] = m;
    const wildcard4 = host === "0.0.0.0";
    const wildcard6 = host === "[::]";
    if (!wildcard4 && !wildcard6) {
      if (!(remote && isLoopback(unbracket(host!)))) out.push(loc);
      continue;
    }
    for (const addrs of table.values()) {
      for (const a of addrs) {
        if (a.family === "IPv6" && (!wildcard6 || a.address.toLowerCase().startsWith("fe80:"))) continue;
        if (remote && isLoopback(a.address)) continue;
        out.push(`${proto}/${a.family === "IPv6" ? `[${a.address}]` : a.address}:${port}${rest}`);
      }
    }
  }
  return out;
}
