// Goal: the pure parts of the `roster` command: Consul-style single-dash flags are rewritten only where
// they are flags (never after `--` or inside the command `roster lock` runs), exact JSON keeps uint64
// values, agent addresses are read as users write them, and `--dev` changes defaults only.
import { describe, expect, test } from 'vitest';
import { loadConfig, type Config } from '../../src/config.ts';
import { devDefaults } from '../../src/cli/agent.ts';
import { normaliseAgentFlags, normaliseFlags, type FlagSpec } from '../../src/cli/args.ts';
import { agentBaseUrl, keyPath } from '../../src/cli/client.ts';
import { CliError } from '../../src/cli/errors.ts';
import { parseExactJson, stringifyExact } from '../../src/cli/output.ts';

const kvPut: FlagSpec = {
  names: new Set(['cas', 'acquire', 'release', 'session', 'flags', 'base64', 'http-addr', 'token', 'json', 'help']),
  takesValue: new Set(['cas', 'session', 'flags', 'http-addr', 'token']),
};
const lock: FlagSpec = { names: new Set(['timeout', 'ttl', 'name', 'json']), takesValue: new Set(['timeout', 'ttl', 'name']), operandsBeforeChild: 1 };

describe('normaliseFlags', () => {
  test('known long flags with one dash get two, with or without a value', () => {
    expect(normaliseFlags(['-cas=5', '-acquire', '-session', 'abc', 'k', 'v', '-json'], kvPut))
      .toEqual(['--cas=5', '--acquire', '--session', 'abc', 'k', 'v', '--json']);
    expect(normaliseFlags(['-http-addr=http://h:1', 'k'], kvPut)).toEqual(['--http-addr=http://h:1', 'k']);
  });

  test('unknown single-dash words, short flags and values are left alone', () => {
    expect(normaliseFlags(['-x', '-recursee', 'k', '-'], kvPut)).toEqual(['-x', '-recursee', 'k', '-']);
    // The value of a flag that takes one is not read as a flag.
    expect(normaliseFlags(['--session', '-json', 'k'], kvPut)).toEqual(['--session', '-json', 'k']);
  });

  test('Consul\'s -cas -modify-index=N (or N as the next word) becomes --cas=N', () => {
    expect(normaliseFlags(['-cas', '-modify-index=12', 'k', 'v'], kvPut)).toEqual(['--cas=12', 'k', 'v']);
    expect(normaliseFlags(['-cas', '-modify-index', '12', 'k'], kvPut)).toEqual(['--cas=12', 'k']);
  });

  test('nothing after -- is touched', () => {
    expect(normaliseFlags(['k', '--', '-json', '-cas=1'], kvPut)).toEqual(['k', '--', '-json', '-cas=1']);
  });

  test('roster lock: the command after the prefix is passed as written, even without --', () => {
    expect(normaliseFlags(['-timeout=1s', '-ttl', '20s', 'p', 'cmd', '-json', '-ttl=3'], lock))
      .toEqual(['--timeout=1s', '--ttl', '20s', 'p', 'cmd', '-json', '-ttl=3']);
  });

  test('roster lock: -n 3 and -n=3 (a one-letter flag with a value); -flag=true / -flag=false on flags without one', () => {
    const consulLock: FlagSpec = {
      names: new Set(['limit', 'verbose', 'child-exit-code', 'no-child-exit-code', 'try']), takesValue: new Set(['limit', 'try']),
      shortTakesValue: new Set(['n']), operandsBeforeChild: 1,
    };
    expect(normaliseFlags(['-n=3', '-verbose=true', 'p', 'cmd', '-n=2'], consulLock)).toEqual(['-n', '3', '--verbose', 'p', 'cmd', '-n=2']);
    expect(normaliseFlags(['-n', '3', '-child-exit-code=false', '-try=1s', 'p', 'cmd'], consulLock)).toEqual(['-n', '3', '--no-child-exit-code', '--try=1s', 'p', 'cmd']);
    // A false flag without a --no- form is simply not given; a word that is not a boolean is left for commander to refuse.
    expect(normaliseFlags(['-verbose=0', '-child-exit-code=T', '-verbose=maybe', 'p', 'c'], consulLock)).toEqual(['--child-exit-code', '--verbose=maybe', 'p', 'c']);
  });

  test('agent flags: -dev and -http-port=N become --dev and --http-port=N', () => {
    expect(normaliseAgentFlags(['-dev', '-http-port=8600', '-x', '--', '-dev'], new Set(['dev', 'http-port'])))
      .toEqual(['--dev', '--http-port=8600', '-x', '--', '-dev']);
  });
});

describe('exact JSON', () => {
  test('integers beyond 2^53 survive a round trip; strings that look like numbers are untouched', () => {
    const text = '[{"Key":"a \\"Flags\\":18446744073709551615","Flags":18446744073709551615,"LockIndex":1,"x":-1.5e3}]';
    const parsed = parseExactJson(text) as Record<string, unknown>[];
    expect(parsed[0]!.Flags).toBe(18446744073709551615n);
    expect(parsed[0]!.Key).toBe('a "Flags":18446744073709551615');
    expect(parsed[0]!.x).toBe(-1500);
    expect(stringifyExact(parsed)).toBe('[{"Key":"a \\"Flags\\":18446744073709551615","Flags":18446744073709551615,"LockIndex":1,"x":-1500}]');
  });
});

describe('agent addresses', () => {
  test('host:port, http:// and https:// URLs; the flag wins over ROSTER_HTTP_ADDR; the default', () => {
    expect(agentBaseUrl(undefined, {})).toBe('http://127.0.0.1:8500');
    expect(agentBaseUrl(undefined, { ROSTER_HTTP_ADDR: '10.0.0.1:8600' })).toBe('http://10.0.0.1:8600');
    expect(agentBaseUrl('https://roster.example:443', { ROSTER_HTTP_ADDR: '10.0.0.1:8600' })).toBe('https://roster.example');
    expect(agentBaseUrl('http://h:1/', {})).toBe('http://h:1');
  });

  test('anything else is a usage error naming where it came from', () => {
    for (const [flag, env, source] of [['ftp://h:1', {}, '--http-addr'], [undefined, { ROSTER_HTTP_ADDR: 'h:1/v1/kv' }, 'ROSTER_HTTP_ADDR'], ['http://[x', {}, '--http-addr']] as const) {
      let err: unknown;
      try { agentBaseUrl(flag, env); } catch (e) { err = e; }
      expect(err).toBeInstanceOf(CliError);
      expect((err as CliError).exitCode).toBe(2);
      expect((err as CliError).message.startsWith(`${source}:`)).toBe(true);
    }
  });

  test('keys become paths segment by segment', () => {
    expect(keyPath('a b/c?d/#e')).toBe('a%20b/c%3Fd/%23e');
  });
});

describe('--dev defaults', () => {
  const load = (argv: string[], env: NodeJS.ProcessEnv = {}) => loadConfig(argv, env, devDefaults('/tmp/dev-dir')) as Config;

  test('node name dev, log level debug, the temporary data dir, HTTP on 127.0.0.1:8500', () => {
    expect(load([])).toMatchObject({ nodeName: 'dev', logLevel: 'debug', dataDir: '/tmp/dev-dir', httpHost: '127.0.0.1', httpPort: 8500 });
  });

  test('flags and the environment still win', () => {
    expect(load(['--node-name', 'mine', '--log-level', 'warn'])).toMatchObject({ nodeName: 'mine', logLevel: 'warn' });
    expect(load([], { ROSTER_NODE_NAME: 'env-node', ROSTER_DATA_DIR: '/tmp/else' })).toMatchObject({ nodeName: 'env-node', dataDir: '/tmp/else' });
  });
});
