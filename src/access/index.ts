/** Authentication, access control, TLS and connection limits shared by every front door (docs/security.md). */
export {
  AccessControl,
  normalizeAddress,
  type Credentials,
  type Decision,
  type Message,
  type Principal,
} from "./access.js";
export { hashSecret } from "./hash.js";
export {
  accessControlSchema,
  restSecuritySchema,
  tlsSchema,
  REST_SECURITY_KEYS,
  MESSAGES,
  type AccessControlConfig,
  type RestSecurityConfig,
  type TlsConfig,
} from "./schema.js";
export { loadTlsOptions } from "./tls.js";
export { ConnectionGuard, connectionLimits, fileDescriptorLimit, type ConnectionLimits } from "./connections.js";
export { isAllowedHost, originAllowed } from "./origin.js";
