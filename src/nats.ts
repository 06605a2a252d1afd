/** `zest/nats`: the NATS fabric and the JetStream volume driver, loaded eagerly. */
export {
  DEFAULT_MAX_DECLARATIONS_PER_PEER,
  NatsFabric,
  natsFabricFromConfig,
  type NatsFabricOptions,
} from "./fabric/index.js";
export { createJetstreamDriver, jetstreamDriver } from "./storage/volumes/jetstream.js";
