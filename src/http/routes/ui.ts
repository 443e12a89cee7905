/**
 * The web dashboard's files: `GET /ui/*` from the directory `npm run build:ui` fills (dist/ui), and the
 * redirects Consul answers (`/` and `/ui` to `/ui/`). The files are public, as Consul's UI is: the page
 * holds no data, and the API calls it makes carry the token the user gives it.
 *
 * Only regular files under that directory are served. The path is split into segments as sent and each is
 * decoded on its own, so an encoded `/` stays inside its segment: `/ui/services/a%2F..%2Fb` is the page of
 * the service `a/../b`. A segment that is `..` once decoded is refused before the file system is asked; a
 * segment holding what no file name here can (`/`, a backslash, NUL) names no file; and the resolved file
 * must still lie under the directory. A path that names no file gets index.html (the page routes on the
 * client), except under `assets/`, where a missing script or style sheet is a 404 rather than HTML the
 * browser would then misread.
 */
import { readFile, realpath, stat } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';
import { RegistryError } from '../../domain/errors.ts';
import type { ApiContext } from '../api.ts';
import type { Reply } from '../reply.ts';
import { decodeOnce, type Request } from '../request.ts';
import { noBody } from '../negotiation.ts';
import type { Route } from '../router.ts';

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * The page talks only to this agent (HTTP and the stream; CSP 3 lets 'self' cover ws: and wss: of the
 * same host) and may not be framed.
 */
const pagePolicy = "default-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Vite names what it puts under assets/ by a hash of the content: such a file never changes. */
const immutable = 'public, max-age=31536000, immutable';
/** Everything else (index.html above all) is revalidated by its ETag on every use. */
const revalidate = 'no-cache';

function notBuilt(dir: string): RegistryError {
  return new RegistryError('uiNotBuilt', { dir });
}

function noFile(path: string): RegistryError {
  return new RegistryError('uiNoFile', { path });
}

/**
 * The decoded segments of the raw path after `/ui/`, without empty and `.` ones; a refusal when one is `..`
 * (also encoded: `%2E%2E`), which would leave the directory.
 */
function pathSegments(raw: string): string[] {
  const segments = raw.split('/').map(decodeOnce);
  if (segments.some((s) => s === '..')) throw new RegistryError('uiPathEscapes');
  return segments.filter((s) => s !== '' && s !== '.');
}

/** A segment that may be a file's name here: none holds a separator of any platform or NUL. */
function isFileName(segment: string): boolean {
  return !/[/\\\0]/.test(segment);
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

/**
 * The file's real path when it is a file inside the real `root`, else undefined: a symbolic link in the
 * dashboard's dir (to /etc/passwd, or to a dir elsewhere) is followed by the reads, so the check is made
 * on where it leads.
 */
async function fileWithin(root: string, file: string): Promise<string | undefined> {
  try {
    const real = await realpath(file);
    return real.startsWith(root + sep) && (await isFile(real)) ? real : undefined;
  } catch {
    return undefined;
  }
}

async function fileReply(file: string, cacheControl: string): Promise<Reply> {
  const type = contentTypes[extname(file).toLowerCase()] ?? 'application/octet-stream';
  const body = await readFile(file);
  return { t: 'file', body, contentType: type, cacheControl, ...(type.startsWith('text/html') ? { headers: [['Content-Security-Policy', pagePolicy]] } : {}) };
}

async function serve(req: Request, api: ApiContext): Promise<Reply> {
  // `/ui` itself: the page's relative asset paths need the trailing slash.
  if (req.path === '/ui') return { t: 'redirect', location: withQuery('/ui/', req), status: 301 };
  const dir = api.uiDir;
  if (dir === undefined) throw notBuilt('dist/ui');
  // The dir itself may be a link (the build links dist/server/dist/ui to the built dashboard).
  const root = await realpath(resolve(dir)).catch(() => resolve(dir));
  const segments = pathSegments(req.path.slice(uiPrefix.length));
  const index = resolve(root, 'index.html');
  if (segments.length > 0) {
    const assets = segments.length > 1 && segments[0] === 'assets';
    if (segments.every(isFileName)) {
      const file = resolve(root, segments.join('/'));
      if (!file.startsWith(root + sep)) throw noFile(req.path);
      const real = await fileWithin(root, file);
      if (real !== undefined) return fileReply(real, assets ? immutable : revalidate);
    }
    if (assets) throw noFile(req.path);
  }
  if (!(await isFile(index))) throw notBuilt(dir);
  return fileReply(index, revalidate);
}

function withQuery(path: string, req: Request): string {
  const q = req.query.toString();
  return q === '' ? path : `${path}?${q}`;
}

/** `/` goes to the dashboard, as on Consul; `//` and the like stay unknown. */
function home(req: Request): Reply {
  if (req.path !== '/') throw new RegistryError('noPage', { method: req.method, path: req.path });
  return { t: 'redirect', location: '/ui/', status: 301 };
}

/** The dashboard's route: the raw path after it is split into segments before they are decoded. */
const uiPrefix = '/ui/';

export const uiRoutes: Route<ApiContext>[] = [
  { path: '/', prefix: false, public: true, methods: { GET: home }, produces: { GET: noBody } },
  // A file's type is known once it is found: the answer is judged on it (negotiation.ts); a redirect has none.
  { path: uiPrefix, prefix: true, rest: 'path', public: true, methods: { GET: serve }, produces: { GET: noBody } },
];
