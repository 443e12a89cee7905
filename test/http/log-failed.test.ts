// Goal: a log that fails for good (here its filesystem turned read-only under it: ext4 aborted) says so once.
// The failure is logged once at error level with its cause, said once; each write refused for it afterwards
// answers 500 (the first, whose commit could not be cut back, may answer that its outcome is unknown) and is
// noted only by its request line, without another error line or stack. gRPC "" is NOT_SERVING. A clean stop,
// whose snapshot the failed log refuses, names the failure with its cause once too.
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { call, startAgent, type Agent } from '../support/agent.ts';
import { processHealth } from '../support/grpc-health.ts';
import { mountLoopDisk, type LoopDisk } from '../support/loop-disk.ts';

const mounted = mountLoopDisk(64);
const disk: LoopDisk | undefined = typeof mounted === 'string' ? undefined : mounted;
if (typeof mounted === 'string') console.warn(`log-failed tests skipped: ${mounted}`);

let agent: Agent | undefined;
afterAll(async () => {
  await agent?.kill9();
  disk?.unmount();
});

const errorLines = (output: string) => output.split('\n').filter((l) => l.includes('"level":50'));

describe.skipIf(disk === undefined)('a log failed for good', () => {
  test('is logged once, with its cause once; the writes refused after it add no error line', async () => {
    agent = await startAgent({ dataDir: join(disk!.dir, 'data') });
    for (let k = 0; k < 5; k++) expect((await call(agent.url, 'PUT', `/v1/kv/before/${k}`, 'v')).status).toBe(200);
    disk!.abort();
    const statuses: number[] = [];
    for (let k = 0; k < 40; k++) statuses.push((await call(agent.url, 'PUT', `/v1/kv/after/${k}`, 'v')).status);
    expect(statuses.slice(1).every((s) => s === 500), statuses.join(',')).toBe(true);
    expect([500, 503]).toContain(statuses[0]);
    expect((await call(agent.url, 'GET', '/v1/kv/before/3?raw')).text).toBe('v');
    expect(await processHealth(agent)).toBe('NOT_SERVING');

    const output = agent.output();
    expect(output.match(/"msg":"WAL failed"/g)).toHaveLength(1);
    expect(output).not.toMatch(/request failed: the log has failed/);
    // The 40 refusals' request lines are warnings; the errors are the failure and nothing per request.
    expect(errorLines(output).length).toBeLessThan(5);
    const failed = errorLines(output).find((l) => l.includes('"msg":"WAL failed"'))!;
    expect(failed).toMatch(/EROFS/);
    expect(output).not.toMatch(/(EROFS[^"\\]*): \1/);
    // A clean stop meets the failure too (its snapshot cannot be written): named with its cause once.
    expect(await agent.stop()).toBe(0);
    expect(agent.output()).toMatch(/shutdown snapshot failed/);
    expect(agent.output()).not.toMatch(/(EROFS[^"\\]*): \1/);
  }, 60_000);
});
