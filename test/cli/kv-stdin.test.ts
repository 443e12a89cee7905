// Goal: `roster kv put <key> -` reads stdin only as far as the agent takes it. An endless stdin (what
// `yes | roster kv put k -` gives) ends at once with the agent's refusal naming its limit, having read a
// bounded part of it, and writes nothing; a value at the limit is stored, one byte more is refused; an
// agent configured for larger values still takes one from stdin, raw or --base64 (decoded as it comes: a
// bad letter far into it exits 2 and writes nothing), several MiB of it with nothing on stderr. --base64
// text may be wrapped in lines (`base64 -w76`, with \n or \r\n), small or streamed; no other blank inside.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { roster, rosterBin } from './support.ts';

const limitDefault = 524288;
const limitLarge = 4 * 1024 * 1024;
let plain: Agent;
let large: Agent;

beforeAll(async () => {
  const file = join(tempDataDir(), 'agent.json');
  writeFileSync(file, JSON.stringify({ limits: { kv_max_value_size: limitLarge } }));
  [plain, large] = await Promise.all([startAgent(), startAgent({ args: ['--config-file', file] })]);
});
afterAll(async () => {
  for (const a of [plain, large]) { await a?.stop(); a?.cleanup(); }
});

/**
 * Runs `roster kv put <key> -` with a stdin that never ends: chunks of `y\n` written as fast as the command
 * reads them, up to `offerMax` bytes, and never closed. Answers how it ended and how much of stdin it took.
 */
function putEndless(agent: Agent, key: string, offerMax: number): Promise<{ code: number | null; stderr: string; taken: number }> {
  const proc = spawn(process.execPath, [rosterBin, 'kv', 'put', key, '-'], {
    env: { ...process.env, ROSTER_HTTP_ADDR: agent.url, NO_COLOR: '1' }, stdio: ['pipe', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
  const chunk = Buffer.from('y\n'.repeat(32 * 1024));
  let taken = 0;
  let over = false;
  proc.stdin!.on('error', () => { over = true; }); // EPIPE once the command is gone
  const offer = () => {
    while (!over && taken < offerMax) {
      taken += chunk.length;
      if (!proc.stdin!.write(chunk)) { proc.stdin!.once('drain', offer); return; }
    }
  };
  offer();
  const deadline = setTimeout(() => proc.kill('SIGKILL'), 15_000);
  return new Promise((resolve) => proc.once('close', (code) => {
    over = true;
    clearTimeout(deadline);
    proc.stdin!.destroy();
    resolve({ code, stderr, taken });
  }));
}

describe('a value from stdin over the agent\'s limit', () => {
  test('an endless stdin: the agent\'s refusal at once, a bounded part of stdin read, nothing written', async () => {
    const r = await putEndless(plain, 'stdin/endless', 256 * 1024 * 1024);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^roster: request body of \\d+ bytes is larger than the limit of ${limitDefault} bytes\\n$`));
    // The buffered head, what the connection and the pipe hold: megabytes, never the whole offer.
    expect(r.taken).toBeLessThan(8 * 1024 * 1024);
    expect((await client(plain).get('/v1/kv/stdin/endless')).status).toBe(404);
  }, 20_000);

  test('a value of the limit is stored; one byte more is refused, naming both sizes', async () => {
    const exact = randomBytes(limitDefault);
    const ok = await roster(['kv', 'put', 'stdin/exact', '-'], { agent: plain.url, input: exact });
    expect(ok.code, ok.stderr).toBe(0);
    expect(Buffer.compare((await client(plain).get('/v1/kv/stdin/exact?raw')).body, exact)).toBe(0);
    const over = await roster(['kv', 'put', 'stdin/over', '-'], { agent: plain.url, input: Buffer.concat([exact, Buffer.from('x')]) });
    expect(over.code).toBe(1);
    expect(over.stderr).toBe(`roster: request body of ${limitDefault + 1} bytes is larger than the limit of ${limitDefault} bytes\n`);
    expect((await client(plain).get('/v1/kv/stdin/over')).status).toBe(404);
  }, 20_000);
});

describe('an agent configured for larger values', () => {
  test('a value from stdin past 512 KiB is stored whole, raw and with --base64', async () => {
    const value = randomBytes(700 * 1024);
    const raw = await roster(['kv', 'put', 'stdin/large', '-'], { agent: large.url, input: value });
    expect(raw.code, raw.stderr).toBe(0);
    expect(Buffer.compare((await client(large).get('/v1/kv/stdin/large?raw')).body, value)).toBe(0);
    const b64 = await roster(['kv', 'put', '--base64', 'stdin/large64', '-'], { agent: large.url, input: `\n ${value.toString('base64')}\n` });
    expect(b64.code, b64.stderr).toBe(0);
    expect(Buffer.compare((await client(large).get('/v1/kv/stdin/large64?raw')).body, value)).toBe(0);
  }, 20_000);

  test('several MiB from stdin, sent as the connection takes them, leave stderr empty', async () => {
    const value = randomBytes(3 * 1024 * 1024);
    const r = await roster(['kv', 'put', 'stdin/mib', '-'], { agent: large.url, input: value });
    expect(r, r.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(Buffer.compare((await client(large).get('/v1/kv/stdin/mib?raw')).body, value)).toBe(0);
  }, 20_000);

  test('--base64 text wrapped in lines of 76, with \\n or \\r\\n, is decoded whole, streamed past 512 KiB', async () => {
    const value = randomBytes(900 * 1024);
    for (const eol of ['\n', '\r\n']) {
      const r = await roster(['kv', 'put', '--base64', 'stdin/wrapped', '-'], { agent: large.url, input: wrapped(value, eol) });
      expect(r, JSON.stringify(eol)).toMatchObject({ code: 0, stderr: '' });
      expect(Buffer.compare((await client(large).get('/v1/kv/stdin/wrapped?raw')).body, value)).toBe(0);
    }
  }, 20_000);

  test('--base64 with a bad letter past the first 512 KiB of value: exit 2, nothing written', async () => {
    const text = randomBytes(700 * 1024).toString('base64');
    const bad = `${text.slice(0, 900_000)}!${text.slice(900_001)}`;
    const r = await roster(['kv', 'put', '--base64', 'stdin/bad64', '-'], { agent: large.url, input: bad });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('roster: --base64: the value is not valid base64\n');
    expect((await client(large).get('/v1/kv/stdin/bad64')).status).toBe(404);
  }, 20_000);
});

/** `value` as `base64 -w76` writes it: lines of 76 letters, each ended by `eol`. */
function wrapped(value: Buffer, eol: string): string {
  return `${value.toString('base64').match(/.{1,76}/gu)!.join(eol)}${eol}`;
}

describe('--base64 values that fit in one request', () => {
  test('text wrapped in lines is decoded, from the argument, a file or stdin; a space or tab inside is still refused', async () => {
    const value = randomBytes(3000);
    const file = join(tempDataDir(), 'wrapped.b64');
    for (const eol of ['\n', '\r\n']) {
      writeFileSync(file, wrapped(value, eol));
      for (const [args, input] of [[[wrapped(value, eol)], undefined], [[`@${file}`], undefined], [['-'], wrapped(value, eol)]] as const) {
        const r = await roster(['kv', 'put', '--base64', 'b64/wrapped', ...args], { agent: plain.url, input });
        expect(r, `${JSON.stringify(eol)} ${args[0].slice(0, 8)}`).toMatchObject({ code: 0, stderr: '' });
        expect(Buffer.compare((await client(plain).get('/v1/kv/b64/wrapped?raw')).body, value)).toBe(0);
      }
    }
    const text = value.toString('base64');
    for (const blank of [' ', '\t', '\v']) {
      const r = await roster(['kv', 'put', '--base64', 'b64/blank', `${text.slice(0, 76)}${blank}${text.slice(76)}`], { agent: plain.url });
      expect(r, JSON.stringify(blank)).toMatchObject({ code: 2, stderr: 'roster: --base64: the value is not valid base64\n' });
    }
    expect((await client(plain).get('/v1/kv/b64/blank')).status).toBe(404);
  }, 20_000);
});
