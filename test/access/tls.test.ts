/**
 * A front door's TLS files (src/access/tls.ts): read as PEM, and a file that is missing or is
 * not PEM refused with an error naming the option and the file.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { loadTlsOptions, readPemFile } from "../../src/access/tls.js";
import { makeCertificate } from "../support/certificate.js";

const dir = mkdtempSync(join(tmpdir(), "zest-tls-files-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("a certificate and key made by openssl are read as they are", () => {
  const { cert, key } = makeCertificate(dir);
  const loaded = loadTlsOptions({ listen_certificate: cert, listen_private_key: key });
  assert.match(loaded.cert.toString(), /^-----BEGIN CERTIFICATE-----/);
  assert.match(loaded.key.toString(), /-----BEGIN (RSA )?PRIVATE KEY-----/);
});

test("a missing file, a directory and a file that is not PEM are refused, naming the option and the file", () => {
  const der = join(dir, "cert.der");
  writeFileSync(der, Buffer.from([0x30, 0x82, 0x01, 0x0a]));
  assert.throws(() => readPemFile(join(dir, "none.pem"), "listen_certificate"), {
    message: `cannot read TLS listen_certificate ${join(dir, "none.pem")}: no such file`,
  });
  assert.throws(() => readPemFile(dir, "listen_private_key"), /cannot read TLS listen_private_key/);
  assert.throws(() => readPemFile(der, "listen_certificate"), {
    message: `TLS listen_certificate ${der} is not a PEM file`,
  });
});
