/** Access-control sections the tests share. */
import { hashSecret } from "../../src/access/hash.js";

/**
 * Deny by default; alice (password `alice-pw`) may put, query and subscribe on `demo/**`, except
 * that `demo/secret/**` is hidden from her queries and subscriptions.
 */
export function aliceDemoAccess() {
  return {
    enabled: true,
    default_permission: "deny",
    rules: [
      {
        id: "demo",
        messages: ["put", "query", "declare_subscriber"],
        key_exprs: ["demo/**"],
        permission: "allow",
      },
      {
        id: "no secrets",
        messages: ["query", "declare_subscriber"],
        key_exprs: ["demo/secret/**"],
        permission: "deny",
      },
    ],
    subjects: [{ id: "alice", usernames: ["alice"] }],
    policies: [{ rules: ["demo", "no secrets"], subjects: ["alice"] }],
    users: [{ name: "alice", password_hash: hashSecret("alice-pw", { ln: 8 }) }],
  };
}
