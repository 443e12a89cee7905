// Goal: what `roster` writes can be trusted. A stdout that cannot take the output (a full disk, stdout
// closed) exits 1 with `roster: cannot write output: <reason>`, while a reader that closes the pipe early
// (EPIPE) ends it quietly with 0; registry text is shown with its control characters escaped, so a name
// cannot forge a row or send a terminal command, while --json and one key's value to a pipe stay exact;
// an answer that is not JSON is named in one line, not a stack trace. Each runs the real command against
// a started agent or a fake server.
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, describe, expect, test } from 'vitest';
import { roster, rosterBin, useAgentAndScratch } from './support.ts';

const cli = useAgentAndScratch('roster-cli-safety-');
const run = (args: string[]) => roster(args, { agent: cli.agent.url });

/** Runs `roster args` through bash with `redirect` applied to its stdout: its exit code and stderr. */
function redirected(args: string[], redirect: string): Promise<{ code: number | null; stderr: string }> {
  const proc = spawn('bash', ['-c', `"$@" ${redirect}`, 'bash', process.execPath, rosterBin, ...args], {
    env: { ...process.env, ROSTER_HTTP_ADDR: cli.agent.url, NO_COLOR: '1' }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
  const deadline = setTimeout(() => proc.kill('SIGKILL'), 20_000);
  return new Promise((resolve) => proc.once('close', (code) => { clearTimeout(deadline); resolve({ code, stderr }); }));
}

describe('stdout that cannot take the output', () => {
  test('a full disk: exit 1 and the reason, for text, raw values and --json', async () => {
    expect((await cli.http.put('/v1/kv/safe/config', 'important')).text).toBe('true');
    for (const args of [['kv', 'export'], ['kv', 'get', 'safe/config'], ['catalog', 'services', '--json']]) {
      const r = await redirected(args, '> /dev/full');
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr).toBe('roster: cannot write output: no space left on device (ENOSPC)\n');
    }
  });

  test('stdout closed: exit 1', async () => {
    const r = await redirected(['kv', 'get', 'safe/config'], '>&-');
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('roster: cannot write output: stdout is closed (EBADF)\n');
    // /dev/null opened by the shell is a place to write: nothing to report.
    expect(await redirected(['kv', 'get', 'safe/config'], '> /dev/null')).toEqual({ code: 0, stderr: '' });
  });

  test('a reader that closes the pipe early: exit 0, nothing on stderr', async () => {
    // More than a pipe holds, so the write meets the closed pipe (EPIPE).
    expect((await cli.http.put('/v1/kv/safe/big', 'x'.repeat(300_000))).text).toBe('true');
    const r = await redirected(['kv', 'export', 'safe/'], '| true; exit "${PIPESTATUS[0]}"');
    expect(r).toEqual({ code: 0, stderr: '' });
  });
});

describe('registry text on screen', () => {
  test('a newline in a check name cannot forge a row; ESC, BEL, NUL, DEL, C1 and bidi are escaped', async () => {
    const forged = 'disk\nnode1  service:db1  disk  passing  db  all good';
    expect((await cli.http.put('/v1/agent/service/register', { Name: 'db', ID: 'db1', Check: { TTL: '60s', Name: forged } })).status).toBe(200);
    const checks = await run(['checks', '--service', 'db']);
    expect(checks.code).toBe(0);
    expect(checks.stdout.trimEnd().split('\n')).toHaveLength(2);
    expect(checks.stdout).toContain('disk\\nnode1  service:db1');
    expect(checks.stdout).toMatch(/critical/);

    const evil = 'evil\u001b]0;PWNED\u0007\u001b[2K\u0000\u007f\u009b\u202e';
    expect((await cli.http.put('/v1/agent/service/register', { Name: evil, ID: 'e1' })).status).toBe(200);
    const services = await run(['catalog', 'services']);
    expect(services.stdout).toContain('evil\\x1b]0;PWNED\\x07\\x1b[2K\\x00\\x7f\\x9b\\u202e');
    // eslint-disable-next-line no-control-regex
    expect(services.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
    // --json stays exact: the name as registered.
    expect(Object.keys(JSON.parse((await run(['catalog', 'services', '--json'])).stdout) as object)).toContain(evil);
  });

  test('kv get --recurse is escaped; one value to a pipe stays byte-exact', async () => {
    const value = 'x\u001b]52;c;ZWNobyBwd25lZA==\u0007\nline2';
    expect((await cli.http.put('/v1/kv/k%1B%5B8m', value)).text).toBe('true');
    const recurse = await run(['kv', 'get', '--recurse', 'k']);
    expect(recurse.stdout).toBe('k\\x1b[8m:x\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\nline2\n');
    const one = await run(['kv', 'get', 'k\u001b[8m']);
    expect(one.stdout).toBe(`${value}\n`);
    const json = JSON.parse((await run(['kv', 'get', 'k\u001b[8m', '--json'])).stdout) as { Key: string; Value: string };
    expect(json.Key).toBe('k\u001b[8m');
    expect(Buffer.from(json.Value, 'base64').toString()).toBe(value);
  });
});

describe('an answer that is not JSON', () => {
  const servers: Server[] = [];
  afterAll(async () => { for (const s of servers) await new Promise((r) => s.close(r)); });

  /** A server that answers every request with `answer` and closes. */
  async function fake(answer: string): Promise<string> {
    const server = createServer((s) => { s.on('error', () => {}); s.once('data', () => s.end(answer)); });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return `127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  test('a captive portal page, a body cut short: one line naming the agent, exit 1', async () => {
    const html = '<html>captive portal</html>';
    const portal = await fake(`HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\nContent-Length: ${html.length}\r\n\r\n${html}`);
    const cut = await fake('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: 9\r\n\r\n{"Value":');
    for (const [addr, type] of [[portal, 'text/html, 27 bytes'], [cut, 'application/json, 9 bytes']] as const) {
      const r = await roster(['members', '--http-addr', addr!]);
      expect(r.code).toBe(1);
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^roster: the agent at http://${addr} answered something that is not JSON: .+ \\(${type}\\)$`));
    }
  });
});
