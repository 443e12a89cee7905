/**
 * The dashboard's addresses. Lists: /ui/services (the default), /ui/nodes, /ui/checks, /ui/sessions,
 * /ui/timeline, /ui/cluster, /ui/log. Details: /ui/services/<name>, /ui/nodes/<name>, /ui/sessions/<id>. The KV
 * browser: /ui/kv/ and /ui/kv/<folder>/ (a path ending in `/`) list a folder, /ui/kv/<key> shows a key;
 * /ui/locks/<key> shows the lock on a key. Anything else under /ui/ is the not-found view. Keys and names
 * are read from the address as addresses.ts writes them.
 */
import { keyFromAddress, segmentFromAddress } from './addresses.ts';

export type ListName = 'services' | 'nodes' | 'checks' | 'sessions';

export type Route =
  | { page: 'list'; list: ListName }
  | { page: 'service'; name: string }
  | { page: 'node'; name: string }
  | { page: 'session'; id: string }
  | { page: 'folder'; prefix: string }
  | { page: 'key'; key: string }
  | { page: 'lock'; key: string }
  | { page: 'timeline' }
  | { page: 'cluster' }
  | { page: 'log' }
  | { page: 'notfound'; path: string };

const lists: ListName[] = ['services', 'nodes', 'checks', 'sessions'];
const details = { services: 'service', nodes: 'node', sessions: 'session' } as const;

export function parseRoute(pathname: string): Route {
  const rest = pathname.replace(/^\/ui\/?/, '');
  if (rest === '') return { page: 'list', list: 'services' };
  const [head = '', ...tail] = rest.split('/');
  const inner = tail.join('/');
  const notFound: Route = { page: 'notfound', path: pathname };
  if (head === 'kv' || head === 'locks') {
    const path = keyFromAddress(tail);
    if (path === undefined) return notFound;
    if (head === 'locks') return path === '' || path.endsWith('/') ? notFound : { page: 'lock', key: path };
    return path === '' || path.endsWith('/') ? { page: 'folder', prefix: path } : { page: 'key', key: path };
  }
  if ((head === 'timeline' || head === 'cluster' || head === 'log') && inner === '') return { page: head };
  if (!(lists as string[]).includes(head)) return notFound;
  if (inner === '') return { page: 'list', list: head as ListName };
  const id = tail.length === 1 ? segmentFromAddress(inner) : undefined;
  const detail = details[head as keyof typeof details] as string | undefined;
  if (detail === undefined || id === undefined || id === '') return notFound;
  return detail === 'service' ? { page: 'service', name: id } : detail === 'node' ? { page: 'node', name: id } : { page: 'session', id };
}

/** The header's tab a route belongs to. */
export function navOf(route: Route): string {
  switch (route.page) {
    case 'list': return route.list;
    case 'service': return 'services';
    case 'node': return 'nodes';
    case 'session': return 'sessions';
    case 'folder': case 'key': case 'lock': return 'kv';
    case 'timeline': return 'timeline';
    case 'cluster': return 'cluster';
    case 'log': return 'log';
    default: return '';
  }
}
