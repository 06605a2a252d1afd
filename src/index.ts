/**
 * zest's library API, shaped like the Zenoh TypeScript client:
 * `import { KeyExpr, Session, Router } from "zest"`.
 */
export {
  KeyExpr,
  KeyExprError,
  canonize,
  intersects,
  includes,
  isWild,
  DEFAULT_KEYEXPR_LIMITS,
  type KeyExprLimits,
} from "./keyexpr/index.js";
export { Router, type RouterOptions, type QueryOptions, type SampleHandler, type QueryHandler } from "./core/router.js";
export {
  Session,
  type IntoKeyExpr,
  type IntoSelector,
  type PutOptions,
  type DeleteOptions,
  type DeclareOptions,
  type GetOptions,
  type MatchingOptions,
  type LivelinessToken,
  type Subscriber,
  type Queryable,
} from "./core/session.js";
export { Query, type ReplyOptions, type QueryContent } from "./core/query.js";
export type { Locality } from "./core/locality.js";
export type { QueryTarget } from "./core/query-target.js";
export type { ConsolidationMode } from "./core/consolidate.js";
export type { MatchingListener } from "./core/matching.js";
export type { Qos } from "./core/qos.js";
export type { Reply, ReplyError, Consolidation } from "./core/reply.js";
export type { Sample, SampleKind } from "./core/sample.js";
export { Encoding, encodingFromContentType } from "./core/encoding.js";
export { Timestamp, HLC } from "./core/timestamp.js";
export { Parameters, type Selector } from "./core/selector.js";
export { ZestError } from "./core/errors.js";
export type { ConditionOptions, ConditionalPutOptions, ConditionalDeleteOptions } from "./core/session.js";
export type { WriteIf } from "./core/conditional-write.js";
export type { WriteCondition } from "./core/sample.js";
export { ChangeFeed, type ChangeEvent, type ChangeListener, type Clock, type Interest } from "./core/ports.js";
export type { StorageCapability, StoredLookup, Insertion, WriteResult } from "./storage/backend.js";
export { memoryDriver } from "./storage/volumes/memory.js";
export type { Fabric, FabricHost, FabricStatus } from "./core/fabric.js";
export type { StorageBackend, Volume, VolumeDriver, VolumeContext, StoredEntry } from "./storage/backend.js";
// What a volume driver describes its options with (docs/adding-a-volume.md).
export {
  booleanOpt,
  choiceOpt,
  credentialOpts,
  driverOptions,
  hostOf,
  intOpt,
  optionsObject,
  parseOptions,
  stringListOpt,
  stringOpt,
  VOLUME_KEYS,
  type DriverOptions,
  type HostRef,
  type OptionsSpec,
  type RawOptions,
  type Reach,
} from "./storage/options.js";
export { startZest, type Zest, type StartOptions } from "./runtime.js";
export { defaultStartOptions } from "./defaults.js";
// SQLite and NATS are imported on first use (`zest/sqlite` and `zest/nats` export them eagerly).
export type { NatsFabric, NatsFabricOptions } from "./fabric/index.js";
export { createJetstreamDriver, lazyDriver, sqliteDriver } from "./drivers.js";
export { influxdbDriver } from "./storage/volumes/influxdb.js";
export type { PluginContext, PluginHandle, PluginStart } from "./plugins.js";
export { configSchema, parseConfig, validateConfig, type ResolvedConfig, type ZestConfig } from "./zest-config.js";
export { ConfigError } from "./config/config.js";
export type {
  AnyFrontDoor,
  DoorContext,
  DoorCounters,
  FrontDoor,
  FrontDoorInstance,
} from "./access/front-door.js";
export { EdgePolicy } from "./access/edge-policy.js";
