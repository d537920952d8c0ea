import { Metadata, ResponderBuilder, ServerInterceptingCall, ServerListenerBuilder, status } from '@grpc/grpc-js';
import type { ServerInterceptor } from '@grpc/grpc-js';
import { METADATA_KEYS } from '@kruntimes/proto';
import { identityOfCertificate } from '@kruntimes/workload-pki';
import { pemOfDer } from './tls-material.ts';

/**
 * The peer port's identity check, as a grpc-js server interceptor on that port's
 * credentials: TLS already required a client certificate chaining to ca.crt; this
 * refuses every call whose certificate does not carry exactly this runtimed's own
 * identity (same namespace and Runtime), before the request reaches FunctionRuntime.
 *
 * Why an interceptor: nice-grpc's CallContext carries no TLS peer information, while
 * grpc-js gives every intercepted call `getAuthContext()` (the verified peer
 * certificate). Attaching it to the credentials scopes it to the peer port.
 */
export function peerIdentityInterceptor(
  expectedIdentity: string,
  onRefused: (peer: string, identity: string | undefined) => void,
): ServerInterceptor {
  return (_method, call) => {
    const listener = new ServerListenerBuilder()
      .withOnReceiveMetadata((metadata, next) => {
        const certificate = call.getAuthContext().sslPeerCertificate;
        const identity = certificate?.raw === undefined ? undefined : identityOfCertificate(pemOfDer(certificate.raw));
        if (identity === expectedIdentity) {
          next(metadata);
          return;
        }
        onRefused(call.getPeer(), identity);
        const trailer = new Metadata();
        trailer.set(METADATA_KEYS.errorCode, 'Forbidden');
        trailer.set(METADATA_KEYS.errorSource, 'platform');
        call.sendStatus({
          code: status.PERMISSION_DENIED,
          details: "the client certificate is not this Runtime's workload identity",
          metadata: trailer,
        });
      })
      .build();
    return new ServerInterceptingCall(
      call,
      new ResponderBuilder()
        .withStart((next) => {
          next(listener);
        })
        .build(),
    );
  };
}
