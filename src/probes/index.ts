/** Health-check probes: one function per check kind, each giving a Probe that runs it once. */
export type { CheckStatus, Probe, ProbeResult } from './types.ts';
export { httpProbe, validateHttpUrl, type HttpProbeOptions } from './http.ts';
export { OwnRequests } from './own-requests.ts';
export { tcpProbe, validateHostPort, type TcpProbeOptions } from './tcp.ts';
export { grpcProbe, validateGrpcTarget, type GrpcProbeOptions } from './grpc.ts';
export { scriptProbe, type ScriptProbeOptions } from './script.ts';
export { containerExecProbe, type ContainerExecProbeOptions } from './container-exec.ts';
export {
  dockerHostDefault,
  grpcTimeoutMsDefault,
  httpRedirectsMax,
  httpTimeoutMsDefault,
  outputBytesMaxDefault,
  scriptTimeoutMsDefault,
  tcpTimeoutMsDefault,
} from './limits.ts';
