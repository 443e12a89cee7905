// Goal: where the compiled agent runs on Node.js 22 and 24 (the official builds from the npm registry),
// shown on real processes. On this host's glibc (older than the 2.38 the binding's builds for these lines
// need) the agent stops at once with exit code 2 and one message naming the Node.js version, the host's
// glibc and the glibc the build needs. Under Debian 13's glibc (the Docker image's base, run through its
// dynamic loader) the agent starts and serves: HTTP (leader, a key, a session holding a lock), a
// /v1/stream subscription that receives an event, gRPC health SERVING, and the `roster` command run
// natively on the same Node.js line. Node.js 20 runs the whole suite, so it is not repeated here.
import * as grpc from '@grpc/grpc-js';
import { rmSync } from 'node:fs';
import { service as healthService } from 'grpc-health-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { hostPlatform } from '../../src/http/binding-error.ts';
import { client, tempDataDir } from '../support/agent.ts';
import { debianLibc, nodeBinary, nodeReleases, type Libc, type NodeLine } from '../support/node-dist.ts';
import { Stream, subscribe } from '../support/stream.ts';
import { buildIntoScratch, command, ready, roster, start, type Started } from './processes.ts';

/** The glibc the binding's builds for ABI 127 and later (Node.js 22, 24, 25) need. */
const neededGlibc = '2.38';
const hostGlibc = hostPlatform().glibc;
const hostTooOld = hostGlibc !== undefined && Number(hostGlibc.split('.')[1]) < 38 && hostGlibc.startsWith('2.');
/** How soon a refused start must have ended: it is refused before anything else is opened. */
const refusedWithinMs = 10_000;

let scratch: string;
let libc: Libc;
const node = {} as Record<NodeLine, string>;

// First run: ~50 MB per Node.js line and 3 MB of glibc are fetched, and the agent is compiled.
beforeAll(() => {
  for (const line of [22, 24] as const) node[line] = nodeBinary(line);
  libc = debianLibc();
  scratch = buildIntoScratch();
}, 900_000);

afterAll(() => {
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

const agentArgs = (dataDir: string) => ['dist/server/src/main.js', '--http-port', '0', '--grpc-port', '0', '--data-dir', dataDir, '--node-name', 'node1'];

describe.each([22, 24] as const)('Node.js %s', (line) => {
  const version = nodeReleases[line];

  test.runIf(hostTooOld)(`on this host's glibc ${hostGlibc}: exit 2 at once, one message naming v${version}, glibc ${hostGlibc} and ${neededGlibc}`, async () => {
    const dataDir = tempDataDir();
    try {
      const agent = start(command(node[line], agentArgs(dataDir)), scratch);
      const { code, ms } = await agent.exited;
      const out = agent.output();
      expect(code, out).toBe(2);
      expect(ms, out).toBeLessThan(refusedWithinMs);
      const prefixed = out.split('\n').filter((l) => l.includes('roster:'));
      expect(prefixed, out).toHaveLength(1);
      expect(prefixed[0]).toMatch(new RegExp(`^roster: the uWebSockets\\.js native binding did not load on node v${version.replaceAll('.', '\\.')} \\(ABI \\d+, linux-x64\\) with glibc ${hostGlibc}: `));
      expect(prefixed[0]).toContain(`needs glibc ${neededGlibc}`);
      expect(out).toMatch(/Run Node\.js 20 on this host, or run on a host or base image with glibc 2\.38 or later/);
      expect(out).toMatch(/ROSTER_UWS_MODULE/);
      expect(out).toContain('docs/running.md, section "Platform support"');
      expect(out).not.toMatch(/roster listening/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  describe(`under Debian 13's glibc`, () => {
    let agent: Started | undefined;
    let dataDir: string;
    let addr: { url: string; grpc: string };

    beforeAll(async () => {
      dataDir = tempDataDir();
      agent = start(command(node[line], agentArgs(dataDir), libc), scratch);
      addr = await ready(agent, 90_000);
    }, 120_000);

    afterAll(async () => {
      await agent?.end();
      if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
    }, 30_000);

    test('serves HTTP: the leader, a key written and read, a session holding a lock', async () => {
      const c = client(addr);
      const leader = await c.get('/v1/status/leader');
      expect(leader.status, leader.text).toBe(200);
      expect((await c.put('/v1/kv/lts/plain', 'v1')).text).toBe('true');
      const got = await c.get('/v1/kv/lts/plain?raw');
      expect(got.text).toBe('v1');
      const session = await c.session({ TTL: '30s' });
      expect((await c.put(`/v1/kv/lts/lock?acquire=${session}`, 'held')).text).toBe('true');
      const other = await c.session({ TTL: '30s' });
      const refused = await c.put(`/v1/kv/lts/lock?acquire=${other}`, 'taken');
      expect(refused.json<{ message: string }>().message, refused.text).toBe('did not acquire lock');
      const [entry] = (await c.get('/v1/kv/lts/lock')).json<{ Session?: string }[]>();
      expect(entry?.Session).toBe(session);
    });

    test('takes request heads up to 128 KiB as the Node.js 20 build does (the newer core defaults to 4 KiB)', async () => {
      const c = client(addr);
      const key = `lts/${'k'.repeat(60_000)}`;
      expect((await c.put(`/v1/kv/${key}`, 'long')).text).toBe('true');
      const got = await fetch(`${addr.url}/v1/kv/${key}?raw`, { headers: { 'x-pad': 'p'.repeat(40_000) } });
      expect(got.status).toBe(200);
      expect(await got.text()).toBe('long');
    });

    test('a /v1/stream subscription receives the event of a write', async () => {
      const s = await Stream.open(addr);
      try {
        await subscribe(s, { id: 'lts', topic: 'kv_prefix', key: 'lts/stream/' });
        const from = s.mark;
        expect((await client(addr).put('/v1/kv/lts/stream/k', 'hello')).status).toBe(200);
        const ev = await s.next(from, (m) => m.id === 'lts' && m.type === 'event', 'the event of the write');
        expect(ev).toMatchObject({ type: 'event', id: 'lts', op: 'upsert', key: 'lts/stream/k' });
      } finally {
        s.end();
      }
    });

    test('gRPC health answers SERVING', async () => {
      const Health = grpc.makeClientConstructor(healthService as grpc.ServiceDefinition, 'grpc.health.v1.Health');
      const health = new Health(addr.grpc, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
        check(req: { service: string }, cb: (err: grpc.ServiceError | null, res?: { status: string }) => void): void;
      };
      try {
        const status = await new Promise<string>((resolve, reject) =>
          health.check({ service: '' }, (err, res) => (err ? reject(err) : resolve(res!.status))));
        expect(status).toBe('SERVING');
      } finally {
        health.close();
      }
    });

    test(`the roster command on Node.js ${line} (natively) writes, reads and locks through it`, () => {
      const put = roster(node[line], addr.url, ['kv', 'put', 'lts/cli', `from-node-${line}`]);
      expect(put.status, put.stderr).toBe(0);
      const get = roster(node[line], addr.url, ['kv', 'get', 'lts/cli']);
      expect(get.status, get.stderr).toBe(0);
      expect(get.stdout).toBe(`from-node-${line}\n`);
      const lock = roster(node[line], addr.url, ['lock', 'lts/job', '--', 'echo "held $ROSTER_LOCK_KEY"']);
      expect(lock.status, lock.stderr).toBe(0);
      expect(lock.stdout).toContain('held lts/job/.lock');
    }, 120_000);
  });
});
