/**
 * The front doors' config sections through `--cfg` on the real command (docs/configuration.md):
 * a malformed, oversized or misspelled `listen`, `scouting`, `plugins/rest` or
 * `plugins/remote_api` value stops the router before it binds anything, with exit code 2 and one
 * line naming the value's path.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { runZestExpectingExit } from "../support/zest-process.js";

/** A JSON string of `n` characters. */
const long = (n: number): string => JSON.stringify("x".repeat(n));

/** Starts `zest --cfg <cfg>` and asserts exit 2 with one line `zest: <path>...` matching `reason`. */
async function refused(cfg: string, path: string, reason: RegExp): Promise<void> {
  // No REST port and no zenoh endpoint of the test's own: the refusal must come before any listen.
  const { code, stderr } = await runZestExpectingExit(["--cfg", cfg]);
  const shown = `${cfg.slice(0, 80)} → ${stderr.slice(0, 300)}`;
  assert.equal(code, 2, shown);
  assert.equal(stderr.split("\n").length, 2, `one line: ${shown}`);
  assert.ok(stderr.startsWith(`zest: ${path}`), `names ${path}: ${shown}`);
  assert.match(stderr, reason, shown);
}

describe("the zenoh door's listen section", () => {
  test("a malformed endpoint is refused naming its place in listen.endpoints", async () => {
    await refused('listen/endpoints:["nonsense"]', "listen.endpoints.0: ", /has no protocol/);
    await refused('listen/endpoints:["tcp/127.0.0.1:7447","tcp/127.0.0.1:99999"]', "listen.endpoints.1: ", /port/);
    await refused("listen/endpoints:[7447]", "listen.endpoints.0: ", /expected string/);
    await refused('listen/endpoints:"tcp/127.0.0.1:7447"', "listen.endpoints: ", /expected array/);
    await refused("listen:7", "listen: ", /expected object/);
  });

  test("too many endpoints, or one too long, are refused", async () => {
    const many = Array.from({ length: 65 }, (_, i) => `"tcp/127.0.0.1:${20_000 + i}"`).join(",");
    await refused(`listen/endpoints:[${many}]`, "listen.endpoints: ", /<=64 items/);
    await refused(`listen/endpoints:[${long(300)}]`, "listen.endpoints.0: ", /<=256 characters/);
  });

  test("a misspelled key is refused with the closest one", async () => {
    await refused("listen:{endpoint:[]}", "unknown key listen.endpoint", /unknown key listen\.endpoint/);
  });
});

describe("the zenoh door's scouting section", () => {
  test("malformed values are refused naming their path", async () => {
    await refused('scouting/multicast/address:"1.2.3.4"', "scouting.multicast.address: ", /IPv4 group and port/);
    await refused('scouting/multicast/enabled:"yes"', "scouting.multicast.enabled: ", /expected boolean/);
    await refused("scouting/multicast/ttl:0", "scouting.multicast.ttl: ", />=1/);
    await refused('scouting/multicast/autoconnect:["router"]', "scouting.multicast.autoconnect: ", /mesh over NATS/);
    await refused("scouting:[]", "scouting: ", /expected object/);
  });

  test("oversized values are refused, the keys kept only for zenohd's configs too", async () => {
    await refused("scouting/multicast/ttl:256", "scouting.multicast.ttl: ", /<=255/);
    await refused(`scouting/multicast/interface:${long(2_000)}`, "scouting.multicast.interface: ", /<=1024/);
    await refused("scouting/timeout:1e12", "scouting.timeout: ", /<=86400000/);
    await refused(`scouting/gossip/target:${long(2_000)}`, "scouting.gossip.target: ", /1024 characters of JSON/);
    await refused(
      `scouting/multicast/autoconnect_strategy:{peer:${long(2_000)}}`,
      "scouting.multicast.autoconnect_strategy: ",
      /1024 characters of JSON/,
    );
  });

  test("a misspelled key is refused with the closest one", async () => {
    await refused("scouting/multicast/enable:false", "unknown key scouting.multicast.enable", /did you mean enabled\?/);
  });
});

describe("the REST door's plugins.rest section", () => {
  test("malformed values are refused naming their path", async () => {
    await refused('plugins/rest/http_port:"nonsense"', "plugins.rest.http_port: ", /invalid http port/);
    await refused('plugins/rest/variant:"c"', "plugins.rest.variant: ", /./);
    await refused("plugins/rest/body_limit:0", "plugins.rest.body_limit: ", />0/);
    await refused("plugins/rest:[]", "plugins.rest: ", /expected object/);
  });

  test("oversized values are refused", async () => {
    await refused(`plugins/rest/http_port:${long(300)}`, "plugins.rest.http_port: ", /256 characters/);
    await refused("plugins/rest/http_port:70000", "plugins.rest.http_port: ", /<=65535/);
    await refused(
      `plugins/rest/cors/allowed_origins:[${long(3_000)}]`,
      "plugins.rest.cors.allowed_origins.0: ",
      /2048/,
    );
    await refused(
      "plugins/rest/http2/max_concurrent_streams:70000",
      "plugins.rest.http2.max_concurrent_streams: ",
      /65536/,
    );
  });

  test("a head timeout beyond the whole request's is refused naming it (Node refused it, without the key, exit 1)", async () => {
    await refused("plugins/rest/headers_timeout_ms:400000", "plugins.rest.headers_timeout_ms: ", /<=120000/);
  });
});

describe("the remote API door's plugins.remote_api section", () => {
  test("malformed values are refused naming their path", async () => {
    await refused('plugins/remote_api/websocket_port:"nonsense"', "plugins.remote_api.websocket_port: ", /invalid/);
    await refused("plugins/remote_api/max_frame_bytes:-1", "plugins.remote_api.max_frame_bytes: ", />0/);
    await refused("plugins/remote_api:7", "plugins.remote_api: ", /expected object/);
  });

  test("oversized values are refused", async () => {
    await refused(`plugins/remote_api/websocket_port:${long(300)}`, "plugins.remote_api.websocket_port: ", /256/);
    await refused("plugins/remote_api/websocket_port:70000", "plugins.remote_api.websocket_port: ", /<=65535/);
  });
});
