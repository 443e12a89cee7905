// Goal: `roster lock`'s Consul flags as a user types them, against a started agent: `-n 3` is a semaphore
// in Consul's key layout that never lets more than 3 commands run at once and runs every one; a holder
// written by hand as Consul's client writes one counts, and is pruned when its session ends; a lock and a
// semaphore (or two limits) on one prefix refuse each other; `-try` gives up with exit 1; `-child-exit-code`
// (=false) decides the exit code; `-verbose` says each step; `-monitor-retry` rides out an agent restart
// when given room, and a lost read ends the command when not.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { client, startAgent, type Agent } from '../support/agent.ts';
import { closedPort, roster, startRoster, until, useAgentAndScratch } from './support.ts';

const cli = useAgentAndScratch('roster-cli-lockc-');
const { file, read } = cli;

const semaphoreFlags = '16210313421097356768';
const sessionsNamed = async (name: string) => (await cli.http.get('/v1/session/list')).json<{ ID: string; Name: string }[]>().filter((s) => s.Name === name);
/** The keys under a prefix with Flags as exact text. */
const keysUnder = async (prefix: string): Promise<{ Key: string; Flags: string; Value: string | null; Session?: string }[]> => {
  const r = await cli.http.get(`/v1/kv/${prefix}/?recurse`);
  return r.status === 404 ? [] : JSON.parse(r.text.replace(/"Flags":(\d+)/g, '"Flags":"$1"'));
};

/** The most commands running at once, from their start/end lines (`id start|end ns`). */
function maxConcurrency(log: string): { max: number; starts: number; ends: number } {
  const events = log.trim().split('\n').map((l) => l.split(' ')).map(([, what, ns]) => ({ up: what === 'start', at: BigInt(ns!) }));
  events.sort((a, b) => (a.at === b.at ? Number(a.up) - Number(b.up) : a.at < b.at ? -1 : 1));
  let running = 0;
  let max = 0;
  for (const e of events) { running += e.up ? 1 : -1; max = Math.max(max, running); }
  return { max, starts: events.filter((e) => e.up).length, ends: events.filter((e) => !e.up).length };
}

describe('-n 3: a semaphore', () => {
  test('8 commands: never more than 3 at once, all of them run; Consul\'s layout on the way; nothing left after', async () => {
    const log = file('sem.log');
    const gate = file('sem.gate');
    // Each command logs its start, waits for the gate (so the first three hold their slots together), then ends.
    const script = (id: number) => `echo "c${id} start $(date +%s%N)" >> ${log}; while [ ! -e ${gate} ]; do sleep 0.05; done; sleep 0.2; echo "c${id} end $(date +%s%N)" >> ${log}`;
    const runs = Array.from({ length: 8 }, (_, id) => startRoster(['lock', ...(id % 2 ? ['-n=3'] : ['-n', '3']), 'sem', '--', script(id)], { agent: cli.agent.url, timeoutMs: 90_000 }));
    await until('three commands to hold a slot', () => read('sem.log').split('\n').filter((l) => l.includes(' start ')).length === 3, 30_000);
    await until('all eight contenders to be waiting or holding', async () => (await keysUnder('sem')).length === 9, 30_000);

    const keys = await keysUnder('sem');
    const lockKey = keys.find((k) => k.Key === 'sem/.lock')!;
    expect(lockKey.Flags).toBe(semaphoreFlags);
    expect(lockKey.Session).toBeUndefined();
    const state = JSON.parse(Buffer.from(lockKey.Value!, 'base64').toString()) as { Limit: number; Holders: Record<string, boolean> };
    expect(state.Limit).toBe(3);
    expect(Object.values(state.Holders)).toEqual([true, true, true]);
    const contenders = keys.filter((k) => k.Key !== 'sem/.lock');
    for (const c of contenders) expect(c).toMatchObject({ Key: `sem/${c.Session}`, Flags: semaphoreFlags });
    for (const holder of Object.keys(state.Holders)) expect(contenders.map((c) => c.Session)).toContain(holder);
    expect(read('sem.log').split('\n').filter((l) => l.includes(' start '))).toHaveLength(3);

    // While it is in use: another limit, or a plain lock, on the prefix is refused and runs nothing.
    const otherLimit = await roster(['lock', '-n', '2', 'sem', '--', `touch ${file('never-a')}`], { agent: cli.agent.url });
    expect(otherLimit.code).toBe(1);
    expect(otherLimit.stderr).toContain('roster: semaphore limit conflict (lock: 3, local: 2)');
    const plainLock = await roster(['lock', 'sem', '--', `touch ${file('never-b')}`], { agent: cli.agent.url });
    expect(plainLock.code).toBe(1);
    expect(plainLock.stderr).toContain("roster: sem/.lock is a semaphore's key");
    expect(existsSync(file('never-a')) || existsSync(file('never-b'))).toBe(false);

    writeFileSync(gate, '');
    const results = await Promise.all(runs.map((r) => r.exited));
    for (const r of results) expect(r, r.stderr).toMatchObject({ code: 0, stderr: '' });
    const seen = maxConcurrency(readFileSync(log, 'utf8'));
    expect(seen).toEqual({ max: 3, starts: 8, ends: 8 });
    expect(await keysUnder('sem')).toEqual([]);
    expect(await sessionsNamed('roster lock sem/.lock')).toEqual([]);
  }, 120_000);

  test('a semaphore on a prefix whose .lock is a plain lock is refused', async () => {
    const holder = await cli.http.session({ Name: 'plain-holder' });
    expect((await cli.http.put(`/v1/kv/plain/.lock?acquire=${holder}&flags=3304740253564472344`)).text).toBe('true');
    const r = await roster(['lock', '-n', '2', 'plain', '--', `touch ${file('never-c')}`], { agent: cli.agent.url });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("roster: plain/.lock is not a semaphore's key (flags 3304740253564472344)");
    expect(existsSync(file('never-c'))).toBe(false);
    expect(await sessionsNamed('roster lock plain/.lock')).toEqual([]);
  });
});

describe('-n 2 next to a holder written as Consul\'s client writes one', () => {
  test('the hand-made holder counts; when its session ends it is pruned and a waiting roster lock takes its slot', async () => {
    // What Consul's api.Semaphore does for a holder: a delete-behaviour session, its contender key, itself in .lock by CAS.
    const consul = await cli.http.session({ Name: 'consul-holder', Behavior: 'delete' });
    expect((await cli.http.put(`/v1/kv/interop/${consul}?acquire=${consul}&flags=${semaphoreFlags}`)).text).toBe('true');
    expect((await cli.http.put(`/v1/kv/interop/.lock?cas=0&flags=${semaphoreFlags}`, JSON.stringify({ Limit: 2, Holders: { [consul]: true } }))).text).toBe('true');

    const gate = file('interop.gate');
    const first = startRoster(['lock', '-n', '2', 'interop', '--', `echo first >> ${file('interop')}; while [ ! -e ${gate} ]; do sleep 0.05; done`], { agent: cli.agent.url, timeoutMs: 60_000 });
    await until('the first roster holder', () => read('interop').includes('first'), 30_000);
    const second = startRoster(['lock', '-n=2', 'interop', '--', `echo second >> ${file('interop')}`], { agent: cli.agent.url, timeoutMs: 60_000 });
    await until('the second to wait with its contender key', async () => (await keysUnder('interop')).length === 4, 30_000);
    const holders = async () => Object.keys(JSON.parse(Buffer.from((await keysUnder('interop')).find((k) => k.Key === 'interop/.lock')!.Value!, 'base64').toString()).Holders);
    expect(await holders()).toHaveLength(2);
    expect(await holders()).toContain(consul);
    expect(read('interop')).toBe('first\n');

    expect((await cli.http.put(`/v1/session/destroy/${consul}`)).status).toBe(200);
    const r = await second.exited;
    expect(r.code, r.stderr).toBe(0);
    expect(read('interop')).toBe('first\nsecond\n');
    writeFileSync(gate, '');
    expect((await first.exited).code).toBe(0);
    expect(await keysUnder('interop')).toEqual([]);
  }, 90_000);
});

describe('-try', () => {
  test('a lock held elsewhere: -try 1s exits 1 and runs nothing; so does a full semaphore with -try=1s', async () => {
    const holder = await cli.http.session({ Name: 'try-holder' });
    expect((await cli.http.put(`/v1/kv/tried/.lock?acquire=${holder}`)).text).toBe('true');
    const r = await roster(['lock', '-try', '1s', 'tried', '--', `touch ${file('never-d')}`], { agent: cli.agent.url });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('roster: did not acquire lock "tried/.lock" within 1s\n');

    const gate = file('try.gate');
    const holderRun = startRoster(['lock', '-n', '1', 'sem1', '--', `while [ ! -e ${gate} ]; do sleep 0.05; done`], { agent: cli.agent.url, timeoutMs: 60_000 });
    const full = startRoster(['lock', '-n=2', 'semfull', '--', `while [ ! -e ${gate} ]; do sleep 0.05; done`], { agent: cli.agent.url, timeoutMs: 60_000 });
    const full2 = startRoster(['lock', '-n=2', 'semfull', '--', `while [ ! -e ${gate} ]; do sleep 0.05; done`], { agent: cli.agent.url, timeoutMs: 60_000 });
    await until('two holders of semfull', async () => {
      const k = (await keysUnder('semfull')).find((e) => e.Key === 'semfull/.lock');
      return k !== undefined && Object.keys(JSON.parse(Buffer.from(k.Value!, 'base64').toString()).Holders).length === 2;
    }, 30_000);
    const third = await roster(['lock', '-n=2', '-try=1s', 'semfull', '--', `touch ${file('never-e')}`], { agent: cli.agent.url });
    expect(third.code).toBe(1);
    expect(third.stderr).toBe('roster: did not acquire a slot of semaphore "semfull" (limit 2) within 1s\n');
    writeFileSync(gate, '');
    for (const x of await Promise.all([holderRun.exited, full.exited, full2.exited])) expect(x.code, x.stderr).toBe(0);
    expect(existsSync(file('never-d')) || existsSync(file('never-e'))).toBe(false);
  }, 90_000);

  test('-try and -timeout together, a bad -n or -monitor-retry: exit 2', async () => {
    for (const [args, message] of [
      [['-try=1s', '-timeout=2s'], '--timeout and --try are one setting'],
      [['-n', '0'], '-n: "0" is not a whole number from 1'],
      [['-n=x'], '-n: "x" is not a whole number'],
      [['-monitor-retry=-1'], '--monitor-retry: "-1" is not a whole number from 0'],
      [['-try', 'soon'], '--try: "soon" is not a duration'],
    ] as const) {
      const r = await roster(['lock', ...args, 'bad', '--', 'true'], { agent: cli.agent.url });
      expect(r.code, JSON.stringify(args)).toBe(2);
      expect(r.stderr).toContain(message);
    }
    expect(await sessionsNamed('roster lock bad/.lock')).toEqual([]);
  });
});

describe('-child-exit-code and -verbose', () => {
  test('-child-exit-code exits with the command\'s code; -child-exit-code=false exits 0 once it ran', async () => {
    expect((await roster(['lock', '-child-exit-code', 'cec', '--', 'exit 7'], { agent: cli.agent.url })).code).toBe(7);
    expect((await roster(['lock', '-child-exit-code=true', 'cec', '--', 'exit 7'], { agent: cli.agent.url })).code).toBe(7);
    const quiet = await roster(['lock', '-child-exit-code=false', 'cec', '--', 'echo ran; exit 7'], { agent: cli.agent.url });
    expect(quiet).toMatchObject({ code: 0, stdout: 'ran\n' });
    expect((await roster(['lock', '-n', '2', '-child-exit-code=false', 'cec2', '--', 'exit 3'], { agent: cli.agent.url })).code).toBe(0);
  });

  test('-verbose says each step on stderr (stdout stays the command\'s); without it stderr is empty', async () => {
    const r = await roster(['lock', '-verbose', 'verb', '--', 'echo out'], { agent: cli.agent.url });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('out\n');
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toBe('Setting up lock at path: verb/.lock');
    expect(lines[1]).toBe('Attempting lock acquisition');
    expect(lines[2]).toMatch(/^Lock acquired \(index [1-9]\d*\); starting the command$/);
    expect(lines[3]).toBe('The command exited (0); releasing the lock');
    expect(lines[4]).toMatch(/^Session [0-9a-f-]{36} destroyed$/);
    const sem = await roster(['lock', '-n', '2', '-verbose', 'verb2', '--', 'true'], { agent: cli.agent.url });
    expect(sem.stderr.split('\n')[0]).toBe('Setting up semaphore (limit 2) at prefix: verb2');
    expect((await roster(['lock', 'verb', '--', 'true'], { agent: cli.agent.url })).stderr).toBe('');
  });
});

describe('-monitor-retry', () => {
  test('-monitor-retry 0: the agent going away while the command runs stops it; given room, moving to another agent is ridden out', async () => {
    const first = await startAgent();
    let second: Agent | undefined;
    let third: Agent | undefined;
    try {
      const marks = file('mr0');
      const child = `trap 'echo got-term >> ${marks}; exit 0' TERM; echo ready >> ${marks}; while true; do sleep 0.05; done`;
      const strict = startRoster(['lock', '-monitor-retry', '0', '-ttl', '60s', 'mr', '--', child], { agent: first.url, timeoutMs: 60_000 });
      await until('the command to start', () => read('mr0').includes('ready'));
      await first.stop();
      const r = await strict.exited;
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('roster: lock lost: watching the lock failed:');
      expect(read('mr0')).toBe('ready\ngot-term\n');

      // The same state served again, at the second of the command's two addresses once the first is gone.
      second = await startAgent({ dataDir: first.dataDir });
      const nextPort = String(await closedPort());
      const go = file('mr-go');
      const patient = startRoster(['lock', '-monitor-retry=60', '-ttl=60s', '-verbose', 'mr2', '--', `echo ready >> ${file('mr1')}; while [ ! -e ${go} ]; do sleep 0.05; done`],
        { agent: `${second.url},127.0.0.1:${nextPort}`, timeoutMs: 120_000 });
      await until('the command to start', () => read('mr1').includes('ready'));
      await second.stop();
      await patient.waitFor(/Watching the lock failed/, 30_000);
      third = await startAgent({ dataDir: first.dataDir, args: ['--http-port', nextPort] });
      await patient.waitFor(/Watching the lock again/, 60_000);
      writeFileSync(go, '');
      const p = await patient.exited;
      expect(p.code, p.stderr).toBe(0);
      expect(p.stderr).not.toContain('lock lost');
      expect((await client(third).get('/v1/kv/mr2/.lock')).json()[0].Session).toBeUndefined();
    } finally {
      await second?.stop();
      await third?.stop();
      first.cleanup();
    }
  }, 180_000);
});
