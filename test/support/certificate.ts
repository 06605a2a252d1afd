import { execFileSync } from "node:child_process";
import { join } from "node:path";

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
