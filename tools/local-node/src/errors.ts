/** Base class of every error the local node agent raises on purpose. */
export class LocalNodeError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The agent's configuration file or options are invalid. */
export class ConfigError extends LocalNodeError {}

/** No free 127.0.0.x address is left for a new Pod. */
export class AddressPoolExhaustedError extends LocalNodeError {}

/**
 * A container cannot be started from its spec (unmapped image, missing Secret key,
 * unsupported field). Reported in the container's waiting state, like the kubelet's
 * `CreateContainerConfigError` / `ErrImagePull`, and retried.
 */
export class ContainerConfigError extends LocalNodeError {
  readonly reason: string;

  constructor(reason: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.reason = reason;
  }
}

/** An address outside 127.0.0.0/8 was about to be dialled. */
export class NonLoopbackAddressError extends LocalNodeError {}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return typeof error === 'string' ? error : JSON.stringify(error);
}
