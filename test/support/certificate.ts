import type { Buffer } from "node:buffer";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { suiteResource } from "./suite.js";

/**
 * A self-signed certificate for 127.0.0.1 and localhost, made with openssl at test time in `dir`.
 * Returns the paths of the PEM certificate and key.
 */
export function makeCertificate(dir: string): { cert: string; key: string } {
  const cert = join(dir, "cert.pem");
  const key = join(dir, "key.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      key,
      "-out",
      cert,
      "-days",
      "1",
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
    ],
    { stdio: "ignore" },
  );
  return { cert, key };
}

/**
 * A certificate authority and a client certificate it signed (for mutual TLS), made with
 * openssl in `dir` under `name`. Returns the paths of the CA certificate and the client's
 * certificate and key.
 */
export function makeClientCertificate(dir: string, name: string): { ca: string; cert: string; key: string } {
  const ca = join(dir, `${name}-ca.pem`);
  const caKey = join(dir, `${name}-ca-key.pem`);
  const cert = join(dir, `${name}-cert.pem`);
  const key = join(dir, `${name}-key.pem`);
  const csr = join(dir, `${name}.csr`);
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  const run = (args: string[]) => execFileSync("openssl", args, { stdio: "ignore" });
  run(["req", "-x509", ...ec, "-keyout", caKey, "-out", ca, "-days", "1", "-subj", `/CN=${name} CA`]);
  run(["req", "-new", ...ec, "-keyout", key, "-out", csr, "-subj", `/CN=${name}`]);
  run(["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-out", cert, "-days", "1"]);
  return { ca, cert, key };
}

/** A suite's certificate: its files, its bytes for clients to trust, and a door's `tls` section naming the files. */
export interface SuiteCertificate {
  readonly cert: string;
  readonly key: string;
  readonly ca: Buffer;
  readonly tls: { listen_certificate: string; listen_private_key: string };
}

/**
 * A self-signed certificate (`makeCertificate`) for the tests of the enclosing `describe`, made
 * in a temporary directory before them and removed after them. Call it before the hooks that
 * start a server with it; read its fields inside hooks and tests.
 */
export function certificateForSuite(prefix: string): SuiteCertificate {
  return suiteResource(
    "the suite's certificate",
    () => {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      const { cert, key } = makeCertificate(dir);
      return { cert, key, ca: readFileSync(cert), tls: { listen_certificate: cert, listen_private_key: key } };
    },
    (c) => rmSync(dirname(c.cert), { recursive: true, force: true }),
  );
}
