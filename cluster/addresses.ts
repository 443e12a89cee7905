/**
 * Seeds are given as `host:port` or as multiaddrs, never with a peer id the user had to copy: a peer id
 * found in a seed is dropped, so a member restarted with a new key is still reached at its address.
 */
import { isIP } from 'node:net';
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr';

/** The multiaddr protocol code of `/p2p/<peer id>`. */
const p2pCode = 421;

/** `/ip4/h/tcp/p` for `h:p` (`/ip6/` for `[h]:p`, `/dns/` for a name); a multiaddr without its peer id. */
export function seedAddr(seed: string): Multiaddr {
  const s = seed.trim();
  if (s.startsWith('/')) return withoutPeerId(multiaddr(s));
  const m = /^(?:\[([^\]]+)\]|([^:\s]+)):(\d{1,5})$/.exec(s);
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (host === undefined || !(port > 0 && port < 65536)) {
    throw new Error(`seed ${JSON.stringify(seed)} is neither host:port nor a multiaddr`);
  }
  const family = isIP(host);
  const proto = family === 4 ? 'ip4' : family === 6 ? 'ip6' : 'dns';
  return multiaddr(`/${proto}/${host}/tcp/${port}`);
}

export function withoutPeerId(ma: Multiaddr): Multiaddr {
  return ma.decapsulateCode(p2pCode);
}
