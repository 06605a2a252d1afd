/**
 * Access control (issue 9): the same router with `access_control` on (100 rules over 10
 * subjects, default deny, the client authenticating with HTTP Basic on every request) against
 * the same router without access control. GET of one key (60-byte JSON) and PUT of 100 bytes,
 * 32 keep-alive connections each, in alternation.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashSecret } from "../../src/access/hash.js";
import { compareGetPut } from "../lib/get-put.js";
import { JSON_60 } from "../lib/payloads.js";
import { type ServerProcess, spawnZest } from "../lib/proc.js";
import type { BenchResult } from "../lib/types.js";

const TARGET = 0.9;
const AUTH = `Basic ${Buffer.from("bench:bench-password").toString("base64")}`;

/** 100 rules: allow and deny rules on many prefixes, for 10 subjects; `bench` may use bench/**. */
function accessControl(): unknown {
  const rules: unknown[] = [];
  for (let i = 0; i < 99; i++) {
    rules.push({
      id: `r${i}`,
      messages: i % 2 ? ["put", "delete"] : ["query", "declare_subscriber"],
      key_exprs: [`area${i}/**`, `bench/area${i}/*/x`],
      permission: i % 5 === 0 ? "deny" : "allow",
    });
  }
  rules.push({
    id: "bench",
    messages: ["put", "delete", "query", "declare_subscriber"],
    key_exprs: ["bench/**"],
    permission: "allow",
  });
  const subjects = Array.from({ length: 10 }, (_, i) => ({
    id: `s${i}`,
    usernames: i === 0 ? ["bench"] : [`user${i}`],
  }));
  const policies = subjects.map((s, i) => ({
    rules: rules.filter((_, k) => k % 10 === i || (i === 0 && k === 99)).map((r) => (r as { id: string }).id),
    subjects: [s.id],
  }));
  return {
    enabled: true,
    default_permission: "deny",
    rules,
    subjects,
    policies,
    users: [{ name: "bench", password_hash: hashSecret("bench-password") }],
  };
}

export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "zest-bench-acl-"));
  const servers: ServerProcess[] = [];
  try {
    const cfg = join(dir, "acl.json5");
    writeFileSync(cfg, JSON.stringify({ access_control: accessControl() }));
    const acl = await spawnZest("zest-acl", ["-c", cfg]);
    servers.push(acl);
    const open = await spawnZest("zest-open");
    servers.push(open);
    for (const z of [acl, open]) {
      const put = await fetch(`${z.url}/bench/one`, {
        method: "PUT",
        body: JSON_60,
        headers: { "content-type": "application/json", authorization: AUTH },
      });
      if (put.status !== 200) throw new Error(`setup PUT answered ${put.status}`);
    }
    const refused = await fetch(`${acl.url}/bench/one`);
    if (refused.status !== 401)
      throw new Error(`an anonymous GET answered ${refused.status}, not 401: access control is not on`);

    return await compareGetPut("access", TARGET, {
      subject: { prefix: "acl", label: "with access control", server: acl },
      baseline: { prefix: "open", label: "without", get: open, put: open },
      headers: { authorization: AUTH },
    });
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}
