// Goal: a `roster` call loads only the code of the command it runs, so it starts fast: --help loads no client
// code, a client command neither the agent's code (its configuration, jose) nor the other commands', and
// `roster agent` none of the client's. Each call runs the real command in its own process with a module
// resolve hook that writes every module it loads to a file; compiled or from the sources alike (the names
// are matched without their extension).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { roster } from './support.ts';

const hooks = `import { appendFileSync } from 'node:fs';
let file;
export function initialize(data) { file = data.file; }
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (r.url.startsWith('file:')) appendFileSync(file, r.url + '\\n');
  return r;
}
`;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'roster-cli-load-'));
  writeFileSync(join(dir, 'hooks.mjs'), hooks);
  writeFileSync(join(dir, 'register.mjs'), `import { register } from 'node:module';
register(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)}, { data: { file: process.env.ROSTER_TEST_LOADED } });
`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `roster args` and answers its exit code and the modules it loaded (file URLs without extension). */
async function loaded(name: string, args: string[]): Promise<{ code: number | null; modules: string[] }> {
  const file = join(dir, `${name}.txt`);
  writeFileSync(file, '');
  const r = await roster(args, { env: { NODE_OPTIONS: `--import ${pathToFileURL(join(dir, 'register.mjs')).href}`, ROSTER_TEST_LOADED: file } });
  const modules = readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((u) => u.replace(/\.(ts|js|mjs|cjs)$/, ''));
  return { code: r.code, modules };
}

/** Whether a module whose URL ends with `tail` (no extension) or contains `/<pkg>/` was loaded. */
const has = (modules: string[], tail: string) => modules.some((m) => m.endsWith(tail) || m.includes(`/node_modules/${tail}/`));

const agentCode = ['/cli/agent', '/src/config', '/src/main', 'jose', 'pino', 'uWebSockets.js'];
const clientCode = ['/cli/client', '/cli/context', '/cli/output', '/cli/kv', '/cli/kv-transfer', '/cli/lock', '/cli/lock-claim', '/cli/semaphore', '/cli/registry', '/cli/watch', '/cli/watch-handler', '/cli/token', 'ws'];

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((res) => server.close(() => res()));
  return port;
}

describe('roster loads only the command it runs', () => {
  test('--help: the command definitions, no client or agent code', async () => {
    const r = await loaded('help', ['--help']);
    expect(r.code).toBe(0);
    expect(has(r.modules, '/cli/roster')).toBe(true);
    for (const m of [...agentCode, ...clientCode]) expect(has(r.modules, m), m).toBe(false);
  });

  test('a client command: its own module and the client, no agent code nor the other commands', async () => {
    const r = await loaded('kv-get', ['kv', 'get', 'x', '--http-addr', `127.0.0.1:${await closedPort()}`]);
    expect(r.code).toBe(1);
    for (const m of ['/cli/kv', '/cli/client', '/cli/context']) expect(has(r.modules, m), m).toBe(true);
    for (const m of [...agentCode, '/cli/kv-transfer', '/cli/lock', '/cli/lock-claim', '/cli/semaphore', '/cli/registry', '/cli/watch', '/cli/watch-handler', '/cli/token', 'ws']) expect(has(r.modules, m), m).toBe(false);
  });

  test('roster agent --help: the agent command and its configuration, no client code', async () => {
    const r = await loaded('agent-help', ['agent', '--help']);
    expect(r.code).toBe(0);
    for (const m of ['/cli/agent', '/src/config']) expect(has(r.modules, m), m).toBe(true);
    for (const m of clientCode) expect(has(r.modules, m), m).toBe(false);
  });
});
