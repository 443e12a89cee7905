/** Named bounds of the probes, unit last. Where a spec fixes a value, the comment says which. */

/** consul-compat.md §4 Default timeouts; registry.md Limits (HTTP and TCP 10 seconds). */
export const httpTimeoutMsDefault = 10_000;
export const tcpTimeoutMsDefault = 10_000;
export const grpcTimeoutMsDefault = 10_000;
/** registry.md Limits: script check timeout 30 seconds. Container exec has none by default (Consul's docker check). */
export const scriptTimeoutMsDefault = 30_000;

/**
 * How long a probe may go on past its timeout (or its caller's abort) before it is settled for it
 * (settledInTime): time for a probe that stopped at its deadline to report its own result.
 */
export const probeStopGraceMs = 1000;

/** registry.md Limits "script check output 4 KB"; consul-compat.md §4 Output cap (check_output_max_size 4096). */
export const outputBytesMaxDefault = 4096;

/** A gRPC health reply larger than this is refused (a Check reply is a few bytes; grpc-go takes up to 4 MiB). */
export const grpcReplyBytesMax = 64 * 1024;

/** Go's http.Client default policy, which Consul's HTTP check keeps: stop at the 10th redirect. */
export const httpRedirectsMax = 10;

/** Container engine answers other than the exec output (create and inspect JSON) are read up to this size. */
export const engineReplyBytesMax = 64 * 1024;

/** consul-compat.md §4 Container exec: the engine address when neither the option nor $DOCKER_HOST gives one. */
export const dockerHostDefault = 'unix:///var/run/docker.sock';
