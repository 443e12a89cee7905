/**
 * Which calls grpc-js has told cancelled, for handlers that may run after the telling. grpc-js reports a
 * cancel (the client's RST_STREAM, an elapsed deadline, the connection's end) to a server-streaming call
 * only if the handler's stream already exists: a call cancelled between its request and its handler's
 * start still reaches the handler, as a live call whose 'cancelled' and 'close' never come. A Watch filed
 * then stayed counted for good against limits.grpc_watch_max(_per_client). This interceptor, first in the
 * server's chain, hears every cancel and marks the call by its request metadata, the very object the
 * handler later sees as `call.metadata`; the handler asks `has()` before filing the call.
 */
import { ResponderBuilder, ServerInterceptingCall, ServerListenerBuilder, type Metadata, type ServerInterceptor } from '@grpc/grpc-js';

export class CancelledCalls {
  private readonly marked = new WeakSet<Metadata>();

  readonly interceptor: ServerInterceptor = (_method, next) => {
    let metadata: Metadata | undefined;
    const listener = new ServerListenerBuilder()
      .withOnReceiveMetadata((received, pass) => {
        metadata = received;
        pass(received);
      })
      .withOnCancel(() => {
        if (metadata !== undefined) this.marked.add(metadata);
      })
      .build();
    return new ServerInterceptingCall(next, new ResponderBuilder().withStart((start) => start(listener)).build());
  };

  /** Whether the call whose request metadata is `metadata` has been cancelled. */
  has(metadata: Metadata): boolean {
    return this.marked.has(metadata);
  }
}
