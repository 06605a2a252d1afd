/** The multicast group and port scouting listens on: zenohd's default and its parsing. */
import { isIPv4 } from "node:net";
import { ZestError } from "../../core/errors.js";

/** zenohd's default group and port. */
export const DEFAULT_SCOUTING_ADDRESS = "224.0.0.224:7446";

/** Splits `host:port` (IPv4) into its parts; throws a `bad_input` ZestError otherwise. */
export function parseScoutingAddress(address: string): { group: string; port: number } {
  const i = address.lastIndexOf(":");
  const group = address.slice(0, i);
  const port = Number(address.slice(i + 1));
  if (i <= 0 || !isIPv4(group) || !Number.isInteger(port) || port < 1 || port > 65535)
    throw new ZestError("bad_input", `scouting.multicast.address: expected an IPv4 group and port, got ${address}`);
  const first = Number(group.split(".")[0]);
  if (first < 224 || first > 239)
    throw new ZestError("bad_input", `scouting.multicast.address: ${group} is not a multicast address (224.0.0.0/4)`);
  return { group, port };
}
