// Goal: the dashboard's cluster page against a three-node TestCluster, in Debian's Chromium: opened on
// one node, it shows the log's leader as /v1/status/leader names it (marked in the node table), this
// node's role, and every node's applied index and lag from /v1/operator/log; a write moves the commit
// index on the page without a reload; the other nodes link to their node pages.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client } from '../support/agent.ts';
import { TestCluster } from '../support/cluster-node.ts';
import { until } from '../support/until.ts';
import { launch, ok, openPage, screenshot } from './browser.ts';

const names = ['r1', 'r2', 'r3'];
let started = 0;
// Node rK talks to nats-server nK alone (as when every host runs its own server: the later --nats wins),
// so the stream's leader always has a Roster node standing for it and the page can name that node.
const cluster: TestCluster = new TestCluster(names, (): string[] => ['--nats', cluster.nats.byName(`n${(started++ % names.length) + 1}`).url]);
let browser: Browser;

interface OperatorLog { leader: string; commitIndex: number; nodes: { name: string; address: string; appliedIndex: number | null; lag: number | null }[] }

beforeAll(async () => {
  await cluster.prepare();
  await Promise.all(names.map((n) => cluster.start(n)));
  const first = client(cluster.nodes.get('r1')!);
  // Every node reports its progress to r1, and a leader is known.
  await until('three reporting nodes and a leader on r1', async () => {
    const log = (await first.get('/v1/operator/log')).json<OperatorLog>();
    return log.leader !== '' && log.nodes.filter((n) => n.appliedIndex !== null && n.address !== '').length === 3 ? true : undefined;
  }, 60_000);
  browser = await launch();
}, 150_000);

afterAll(async () => {
  await browser?.close();
  await cluster.stop();
});

describe('the cluster page', () => {
  test('the log leader, this node\'s role, and every node\'s applied index and lag, kept fresh', async () => {
    const r1 = cluster.nodes.get('r1')!;
    const c = client(r1);
    const page = await openPage(browser, r1.url, '/ui/cluster');
    try {
      await page.waitForSelector('[data-view="log-nodes"] tr[data-log-node="r3"] [data-applied]:not(:text-is("unknown"))');
      const leader = (await c.get('/v1/status/leader')).json<string>();
      const leaderNode = names.find((n) => cluster.nodes.get(n)!.url.endsWith(`//${leader}`));
      expect(leaderNode, `a node has the leader's address ${leader}`).toBeDefined();
      await page.waitForSelector(`#log-leader[data-leader-node="${leaderNode}"]`);
      expect(await page.textContent('#log-leader')).toContain(leader);
      expect(await page.getAttribute(`tr[data-log-node="${leaderNode}"]`, 'data-leader')).toBe('true');
      expect(await page.locator('tr[data-leader="true"]').count()).toBe(1);
      expect(await page.textContent('#log-role')).toBe(leaderNode === 'r1' ? 'Leader' : 'Follower');
      expect(await page.$$eval('tr[data-log-node]', (rs) => rs.map((r) => r.getAttribute('data-log-node')))).toEqual(names);
      for (const n of names) {
        const lag = await page.getAttribute(`tr[data-log-node="${n}"] [data-lag]`, 'data-lag');
        expect(Number.isInteger(Number(lag)) && lag !== '', `${n}'s lag is a number, not "${lag}"`).toBe(true);
      }
      // A write moves the commit index on the open page.
      const before = Number(await page.textContent('#log-commit'));
      await ok(c.put('/v1/kv/ui/cluster-test', 'x'), 'write');
      // (Polled from here: the page's CSP allows no evaluated script, so no waitForFunction.)
      await until('a higher commit index on the page', async () => (Number(await page.textContent('#log-commit')) > before ? true : undefined), 10_000);
      await screenshot(page, 'ui-cluster');
      await page.click('tr[data-log-node="r2"] a');
      await page.waitForURL('**/ui/nodes/r2');
      await page.waitForSelector('[data-member="alive"]');
    } finally {
      await page.close();
    }
  });
});
