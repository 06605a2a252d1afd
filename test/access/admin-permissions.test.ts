/**
 * Who may read and write the admin space (src/access/admin-permissions.ts, docs/security.md):
 * `--adminspace-permissions` parsed, and the one rule every front door applies.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as admin from "../../src/access/admin-permissions.js";
import { ZestError } from "../../src/core/errors.js";

const isKind = (kind: string, re: RegExp) => (e: unknown) =>
  e instanceof ZestError && e.kind === kind && re.test(e.message);

test("--adminspace-permissions takes r, w, rw or none, in any case, and nothing else", () => {
  assert.deepEqual(admin.parseAdminPermissions("r"), { read: true, write: false });
  assert.deepEqual(admin.parseAdminPermissions(" W "), { read: false, write: true });
  assert.deepEqual(admin.parseAdminPermissions("RW"), { read: true, write: true });
  assert.deepEqual(admin.parseAdminPermissions("none"), { read: false, write: false });
  for (const bad of ["", "wr", "read", "r,w", "all"])
    assert.throws(() => admin.parseAdminPermissions(bad), isKind("bad_input", /use r, w, rw or none/), bad);
});

test("the admin space is @ and what lies below it, not a chunk that merely starts with @", () => {
  for (const key of ["@", "@/router/local", "@/**"]) assert.equal(admin.isAdminKey(key), true, key);
  for (const key of ["@x", "@x/y", "a/@", "a/@/b", "**", ""]) assert.equal(admin.isAdminKey(key), false, key);
});

test("by default anyone reads and only loopback clients write; r, w and none say otherwise", () => {
  assert.equal(admin.mayWriteAdmin(admin.DEFAULT_ADMIN_PERMISSIONS, true), true);
  assert.equal(admin.mayWriteAdmin(admin.DEFAULT_ADMIN_PERMISSIONS, false), false);
  admin.checkAdminRead(admin.DEFAULT_ADMIN_PERMISSIONS, "@/router/local");
  admin.checkAdminWrite(admin.DEFAULT_ADMIN_PERMISSIONS, "@/router/local/config/x", true);
  assert.throws(
    () => admin.checkAdminWrite(admin.DEFAULT_ADMIN_PERMISSIONS, "@/router/local/config/x", false),
    isKind("forbidden", /from loopback clients only/),
  );
  const r = admin.parseAdminPermissions("r");
  assert.throws(
    () => admin.checkAdminWrite(r, "@/x", true),
    isKind("forbidden", /writing the admin space is disabled/),
  );
  assert.equal(admin.mayWriteAdmin(admin.parseAdminPermissions("w"), false), true);
  assert.throws(
    () => admin.checkAdminRead(admin.parseAdminPermissions("none"), "@"),
    isKind("forbidden", /reading the admin space is disabled/),
  );
});

test("keys outside the admin space are never refused, whatever the permissions", () => {
  const none = admin.parseAdminPermissions("none");
  admin.checkAdminRead(none, "demo/**");
  admin.checkAdminWrite(none, "demo/a", false);
  admin.checkAdminWrite(none, "@x/a", false);
});
