// Goal: a client cannot fill the agent's log. A request line carries at most 1,024 characters of its path
// (then `pathChars` gives the length); a server error the request alone caused (`?dc=` naming another
// datacenter: 503 in the seed dialect, Consul's 500 `No path to datacenter`) is logged at debug like a 4xx,
// not at warn; and the warn lines of server errors a client repeats are limited: a burst of 20, then about
// one a second, and 5 s after the first left out, one line says how many were. A real agent at debug.
import { describe, expect, test } from 'vitest';
import { call } from '../support/agent.ts';
import { useConfigAgent } from '../support/config-agent.ts';
import { until } from '../support/until.ts';

interface Line { level: number; msg: string; path?: string; pathChars?: number; status?: number; route?: string; suppressed?: number; of?: string }

const lines = (out: string): Line[] => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Line);

describe('request log lines a client causes', () => {
  const a = useConfigAgent('roster-request-log-', { enable_debug: true }, { args: ['--log-level', 'debug'] });

  test('an unknown ?dc with a 60 KB key: 503, logged at debug with the path cut at 1,024 characters', async () => {
    const key = 'k'.repeat(60_000);
    for (let i = 0; i < 20; i++) {
      const r = await call(a.agent.url, 'GET', `/v1/kv/${key}?dc=nowhere`);
      expect(r.status).toBe(503);
    }
    const seen = await until('the request lines', async () => {
      const found = lines(a.agent.output()).filter((l) => l.msg === 'request' && l.status === 503 && l.route === '/v1/kv/*');
      return found.length === 20 ? found : undefined;
    });
    for (const l of seen) {
      expect(l.level).toBe(20);
      expect(l.path).toBe(`/v1/kv/${key.slice(0, 1024 - '/v1/kv/'.length)}…`);
      expect(l.pathChars).toBe(60_000 + '/v1/kv/'.length);
    }
    // 20 requests of 60 KB paths: some tens of KB of log, not 1.2 MB.
    expect(a.agent.output().length).toBeLessThan(200_000);
  });

  test('warn lines of a repeated server error are limited, and their count is told', async () => {
    // One heap profile at a time: while this one runs, every other is refused 503.
    const running = call(a.agent.url, 'GET', '/v1/agent/debug/heap-profile?seconds=4');
    await until('the profile to start', async () => ((await call(a.agent.url, 'GET', '/v1/agent/debug/heap-profile?seconds=1')).status === 503 ? true : undefined));
    const sent = 300;
    const statuses = await Promise.all(Array.from({ length: sent }, () => call(a.agent.url, 'GET', '/v1/agent/debug/heap-profile?seconds=1').then((r) => r.status)));
    expect(statuses.filter((s) => s === 503)).toHaveLength(sent);
    const warnedLines = () => lines(a.agent.output()).filter((l) => l.msg === 'request' && l.status === 503 && l.route === '/v1/agent/debug/heap-profile');
    const toldLines = () => lines(a.agent.output()).filter((l) => l.of === 'request');
    // Every refusal is a warn line or counted in one that says how many were left out (5 s after the first).
    await until('the count of the lines left out', async () => {
      const told = toldLines().reduce((n, l) => n + l.suppressed!, 0);
      return warnedLines().length + told >= sent + 1 ? true : undefined;
    });
    expect(warnedLines().every((l) => l.level === 40)).toBe(true);
    // The burst of 20 (the first refusal, which found the profile running, among them) and about one a second.
    expect(warnedLines().length).toBeLessThanOrEqual(30);
    for (const told of toldLines()) {
      expect(told.level).toBe(40);
      expect(told.msg).toBe(`${told.suppressed} similar lines suppressed: "request"`);
    }
    expect((await running).status).toBe(200);
  }, 30_000);
});
