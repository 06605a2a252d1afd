/** Authentication, access control, TLS and connection limits shared by every front door (docs/security.md). */
export {
  AccessControl,
  normalizeAddress,
  type Credentials,
  type Decision,
  type Identity,
  type Message,
  type Principal,
} from "./access.js";
export { hashSecret } from "./hash.js";
export {
  accessControlSchema,
  tlsSchema,
  MESSAGES,
  LINK_PROTOCOLS,
  type LinkProtocol,
  type AccessControlConfig,
  type TlsConfig,
} from "./schema.js";
export { loadTlsOptions } from "./tls.js";
export { ConnectionGuard, connectionLimits, fileDescriptorLimit, type ConnectionLimits } from "./connections.js";
export { isAllowedHost, originAllowed } from "./origin.js";
export {
  checkAdminRead,
  checkAdminWrite,
  DEFAULT_ADMIN_PERMISSIONS,
  isAdminKey,
  mayWriteAdmin,
  parseAdminPermissions,
  type AdminPermissions,
} from "./admin-permissions.js";
export {
  authorizationOf,
  httpClient,
  httpClientWithToken,
  httpCredentials,
  isLoopbackAddress,
  type ClientInfo,
} from "./client.js";
export { EdgePolicy, type DoorIdentity, type TlsMaterial } from "./edge-policy.js";
export type {
  AnyFrontDoor,
  DoorContext,
  DoorCounters,
  DoorFlag,
  FrontDoor,
  FrontDoorInstance,
  HttpRequestMetrics,
} from "./front-door.js";
export { httpStatus } from "./http-status.js";
export { endpointSchema, isLoopbackHost, listen, parseEndpoint, protectedBind, type Endpoint } from "./listen.js";
