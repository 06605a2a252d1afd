/**
 * Who may read and write the admin space (src/access/admin-permissions.ts, docs/security.md):
 * `--adminspace-permissions` parsed, and the one rule every front door applies.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  checkAdminRead,
  checkAdminWrite,
  DEFAULT_ADMIN_PERMISSIONS,
  isAdminKey,
  mayWriteAdmin,
  parseAdminPermissions,
} from "../../src/access/admin-permissions.js";
import { ZestError } from "../../src/core/errors.js";

const isKind = (kind: string, re: RegExp) => (e: unknown) =>
  e instanceof ZestError && e.kind === kind && re.test(e.message);

test("--adminspace-permissions takes r, w, rw or none, in any case, and nothing else", () => {
  assert.deepEqual(parseAdminPermissions("r"), { read: true, write: false });
  assert.deepEqual(parseAdminPermissions(" W "), { read: false, write: true });
  assert.deepEqual(parseAdminPermissions("RW"), { read: true, write: true });
  assert.deepEqual(parseAdminPermissions("none"), { read: false, write: false });
  for (const bad of ["", "wr", "read", "r,w", "all"])
    assert.throws(() => parseAdminPermissions(bad), isKind("bad_input", /use r, w, rw or none/), bad);
});

test("the admin space is @ and what lies below it, not a chunk that merely starts with @", () => {
  for (const key of ["@", "@/router/local", "@/**"]) assert.equal(isAdminKey(key), true, key);
  for (const key of ["@x", "@x/y", "a/@", "a/@/b", "**", ""]) assert.equal(isAdminKey(key), false, key);
});

test("by default anyone reads and only loopback clients write; r, w and none say otherwise", () => {
  assert.equal(mayWriteAdmin(DEFAULT_ADMIN_PERMISSIONS, true), true);
  assert.equal(mayWriteAdmin(DEFAULT_ADMIN_PERMISSIONS, false), false);
  checkAdminRead(DEFAULT_ADMIN_PERMISSIONS, "@/router/local");
  checkAdminWrite(DEFAULT_ADMIN_PERMISSIONS, "@/router/local/config/x", true);
  assert.throws(
    () => checkAdminWrite(DEFAULT_ADMIN_PERMISSIONS, "@/router/local/config/x", false),
    isKind("forbidden", /from loopback clients only/),
  );
  const r = parseAdminPermissions("r");
  assert.throws(() => checkAdminWrite(r, "@/x", true), isKind("forbidden", /writing the admin space is disabled/));
  assert.equal(mayWriteAdmin(parseAdminPermissions("w"), false), true);
  assert.throws(
    () => checkAdminRead(parseAdminPermissions("none"), "@"),
    isKind("forbidden", /reading the admin space is disabled/),
  );
});

test("keys outside the admin space are never refused, whatever the permissions", () => {
  const none = parseAdminPermissions("none");
  checkAdminRead(none, "demo/**");
  checkAdminWrite(none, "demo/a", false);
  checkAdminWrite(none, "@x/a", false);
});
