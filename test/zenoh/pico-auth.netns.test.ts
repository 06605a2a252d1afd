/**
 * Access control in the handshake with the real zenoh-pico programs: pico 1.9.0 implements no
 * user/password authentication (its `Z_CONFIG_USER_KEY`/`Z_CONFIG_PASSWORD_KEY` are listed as
 * unused, and the example programs take no credential flags), so a pico client is always
 * anonymous. Where the router requires credentials it is refused in the handshake; where the
 * rules give anonymous loopback clients something, it works beside users.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import { startZest, type Zest } from "../../src/runtime.js";
import { picoSkip, picoPut, runPico } from "../support/pico.js";

const skip = picoSkip("z_put");
const dir = mkdtempSync(join(tmpdir(), "zest-pico-auth-"));
const dictionary = join(dir, "users.txt");
writeFileSync(dictionary, "alice:wonderland\n");
const opened: Zest[] = [];
after(async () => {
  for (const z of opened) await z.close();
  rmSync(dir, { recursive: true, force: true });
});

async function router(policies: unknown[]): Promise<{ zest: Zest; ep: string }> {
  const zest = await startZest(
    {
      plugins: { rest: { http_port: "none" } },
      listen: { endpoints: ["tcp/127.0.0.1:0"] },
      transport: { auth: { usrpwd: { dictionary_file: dictionary } } },
      access_control: {
        enabled: true,
        default_permission: "deny",
        rules: [{ id: "put", messages: ["put"], key_exprs: ["pico/**"], permission: "allow" }],
        subjects: [
          { id: "alice", usernames: ["alice"] },
          { id: "local", cidrs: ["127.0.0.0/8"] },
        ],
        policies,
      },
    } as never,
    { logger: silentLogger },
  );
  opened.push(zest);
  return { zest, ep: zest.zenohLocators[0]! };
}

describe("pico against a router that takes credentials", { skip }, () => {
  test("pico, which sends none, is refused in the handshake when only users may do anything", async () => {
    const { ep } = await router([{ rules: ["put"], subjects: ["alice"] }]);
    const put = runPico("z_put", ["-e", ep, "-k", "pico/refused", "-v", "x"]);
    try {
      await put.waitFor(/Unable to open session/, 10_000);
      assert.notEqual(await put.exited(), 0);
    } finally {
      await put.stop();
    }
  });

  test("pico is admitted as an anonymous client when the rules give its address something", async () => {
    const { zest, ep } = await router([
      { rules: ["put"], subjects: ["alice"] },
      { rules: ["put"], subjects: ["local"] },
    ]);
    const got: string[] = [];
    zest.session.declareSubscriber("pico/**", (s) => void got.push(s.key));
    await picoPut(["-e", ep, "-k", "pico/admitted", "-v", "x"]);
    const end = Date.now() + 5000;
    while (!got.includes("pico/admitted") && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(got, ["pico/admitted"]);
  });
});
