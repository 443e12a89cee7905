// Goal (issue 9, minority partition): first prove the partition tool really cuts loopback TCP between
// two groups of processes (an open connection goes silent, a new one cannot be made, a process in neither
// group is untouched) and really heals; then cut one Roster node together with its nats-server off from
// the other two of each, keep writing through every node, and show the minority answers no write and no
// ?consistent read with success while the majority keeps serving, and that after healing every node
// agrees (same X-Consul-Index, same values).
import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { dropCounts, healAll, partition, partitionUnavailable } from './partition.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Processes this file started, killed by pid in afterAll. */
const started: ChildProcess[] = [];

beforeAll(() => {
  const why = partitionUnavailable();
  if (why !== undefined) throw new Error(`the partition tests cannot run here: ${why}`);
});

afterAll(async () => {
  await healAll();
  for (const p of started) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
});

/** A child process that prints lines; `next(re)` waits for the next line matching re. */
function child(script: string): { proc: ChildProcess; send(line: string): void; next(re: RegExp, ms?: number): Promise<string> } {
  const proc = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  started.push(proc);
  const lines: string[] = [];
  let buf = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop()!;
    lines.push(...parts);
  });
  return {
    proc,
    send: (line) => { proc.stdin!.write(`${line}\n`); },
    next: async (re, ms = 5_000) => {
      const deadline = Date.now() + ms;
      while (Date.now() < deadline) {
        const k = lines.findIndex((l) => re.test(l));
        if (k >= 0) return lines.splice(0, k + 1).pop()!;
        await sleep(10);
      }
      throw new Error(`no line matching ${re} in ${ms} ms`);
    },
  };
}

/** Echo server: prints its port, echoes every line back. */
const echoServer = `
const net = require('node:net');
const srv = net.createServer((s) => s.on('data', (d) => s.write(d)));
srv.listen(0, '127.0.0.1', () => console.log('port ' + srv.address().port));`;

/**
 * Client: one long-lived connection made at start ("old"); on stdin "old" it sends on that one, on
 * "new" it opens a fresh connection and sends; prints "<which> ok" when the echo comes back within 1.5 s,
 * else "<which> timeout".
 */
const echoClient = (port: number) => `
const net = require('node:net');
const old = net.createConnection(${port}, '127.0.0.1');
let waiting = null;
old.on('data', () => { if (waiting) { waiting('old ok'); waiting = null; } });
old.on('error', () => {});
old.on('connect', () => console.log('ready'));
const ask = (which, sock) => new Promise((res) => {
  const t = setTimeout(() => { waiting = null; res(which + ' timeout'); if (which === 'new') sock.destroy(); }, 1500);
  if (which === 'old') waiting = (m) => { clearTimeout(t); res(m); };
  else sock.once('data', () => { clearTimeout(t); res('new ok'); sock.destroy(); });
  sock.on('error', () => {});
  sock.write('x\\n');
});
require('node:readline').createInterface({ input: process.stdin }).on('line', async (l) => {
  const sock = l === 'old' ? old : net.createConnection(${port}, '127.0.0.1');
  if (l === 'old') console.log(await ask('old', old));
  else console.log(await ask('new', sock));
});`;

/** The runner's own echo round trip (the runner is in neither group). */
async function runnerEcho(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s: Socket = createConnection(port, '127.0.0.1');
    const t = setTimeout(() => { s.destroy(); resolve(false); }, 1_500);
    s.on('error', () => { clearTimeout(t); resolve(false); });
    s.once('data', () => { clearTimeout(t); s.destroy(); resolve(true); });
    s.write('x\n');
  });
}

describe('the partition tool', () => {
  test('cuts an open loopback connection and new ones between two groups, spares others, and heals', async () => {
    const server = child(echoServer);
    const port = Number((await server.next(/^port /)).split(' ')[1]);
    const cl = child(echoClient(port));
    await cl.next(/^ready$/);
    cl.send('old');
    expect(await cl.next(/^old /)).toBe('old ok');
    cl.send('new');
    expect(await cl.next(/^new /)).toBe('new ok');

    const p = await partition([cl.proc.pid!], [server.proc.pid!]);
    try {
      console.log(`partition self-test: table ${p.table}, listening ${JSON.stringify(p.listening)}, pairs ${p.pairs.join(' ')}`);
      expect(p.listening.b).toContain(port);
      expect(p.pairs.length).toBe(2); // the old connection, both directions
      cl.send('old');
      expect(await cl.next(/^old /)).toBe('old timeout');
      cl.send('new');
      expect(await cl.next(/^new /)).toBe('new timeout');
      expect(await runnerEcho(port)).toBe(true);
      const drops = dropCounts(p);
      console.log('partition self-test drops:', JSON.stringify(drops));
      expect(drops.reduce((n, [, k]) => n + k, 0)).toBeGreaterThan(0);
    } finally {
      await p.heal();
    }
    cl.send('new');
    expect(await cl.next(/^new /)).toBe('new ok');
    // The old connection recovers once TCP retransmits (its backoff grew during the cut): bounded wait.
    let recovered = false;
    for (let i = 0; i < 10 && !recovered; i++) {
      cl.send('old');
      recovered = (await cl.next(/^old /)) === 'old ok';
    }
    expect(recovered).toBe(true);
  }, 60_000);
});
