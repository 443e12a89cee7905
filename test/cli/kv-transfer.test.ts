// Goal: `roster kv export` and `roster kv import` speak `consul kv export/import`'s JSON (an array of
// {key, flags, value-as-base64}, tab-indented): an export imported into a fresh agent gives the same keys,
// bytes and uint64 flags (the second export is byte-for-byte the first); a hand-written file in Consul's
// format imports; a malformed document exits 2 and writes nothing.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startAgent, type Agent } from '../support/agent.ts';
import { roster } from './support.ts';

let source: Agent;
let fresh: Agent;
let scratch: string;

beforeAll(async () => {
  [source, fresh] = await Promise.all([startAgent(), startAgent()]);
  scratch = mkdtempSync(join(tmpdir(), 'roster-cli-kvx-'));
});
afterAll(async () => {
  await Promise.all([source?.stop(), fresh?.stop()]);
  source?.cleanup();
  fresh?.cleanup();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const binary = Buffer.from([0, 1, 2, 0xfe, 0xff, 10]);

/** The entries under a prefix as the HTTP API gives them, without the indexes (which differ between agents). */
async function entries(agent: Agent, prefix: string) {
  const r = await client(agent).get(`/v1/kv/${prefix}?recurse`);
  if (r.status === 404) return [];
  // Flags compared as text: uint64 beyond 2^53 must survive exactly.
  return JSON.parse(r.text.replace(/"Flags":(\d+)/g, '"Flags":"$1"')).map((e: Record<string, unknown>) => ({ Key: e.Key, Flags: e.Flags, Value: e.Value }));
}

describe('export → import round trip', () => {
  test('every key, value byte and uint64 flag arrives; exporting again gives the same document', async () => {
    const http = client(source);
    for (const [key, body, flags] of [['app/config', '{"a":1}', '0'], ['app/bin', binary, '18446744073709551615'], ['app/empty', '', '42'],
      ['app/dir/', '', '0'], ['app/sp ace?', 'x', '7'], ['other/k', 'not exported', '0']] as const) {
      expect((await http.put(`/v1/kv/${key.replace(' ', '%20').replace('?', '%3F')}?flags=${flags}`, body)).text).toBe('true');
    }
    const exported = await roster(['kv', 'export', 'app/'], { agent: source.url });
    expect(exported.code, exported.stderr).toBe(0);
    const doc = exported.stdout;
    expect(doc.startsWith('[\n\t{\n\t\t"key": "app/bin",\n\t\t"flags": 18446744073709551615,\n')).toBe(true);
    expect(doc).toContain(`"value": "${binary.toString('base64')}"`);
    expect(doc).not.toContain('other/k');

    const imported = await roster(['kv', 'import', '-'], { agent: fresh.url, input: doc });
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout.split('\n').filter(Boolean)).toEqual(['app/bin', 'app/config', 'app/dir/', 'app/empty', 'app/sp ace?'].map((k) => `Imported: ${k}`));
    expect(await entries(fresh, 'app/')).toEqual(await entries(source, 'app/'));
    expect((await client(fresh).get('/v1/kv/app/bin?raw')).body).toEqual(binary);
    const again = await roster(['kv', 'export', 'app/'], { agent: fresh.url });
    expect(again.stdout).toBe(doc);
  });

  test('export with no prefix is every key; an empty prefix exports []; import from a file and with -prefix', async () => {
    const all = await roster(['kv', 'export'], { agent: source.url });
    expect(JSON.parse(all.stdout).map((e: { key: string }) => e.key)).toContain('other/k');
    expect((await roster(['kv', 'export', 'nothing/here/'], { agent: source.url })).stdout).toBe('[]\n');
    const file = join(scratch, 'export.json');
    writeFileSync(file, (await roster(['kv', 'export', 'other/'], { agent: source.url })).stdout);
    const r = await roster(['kv', 'import', '-prefix=copied', file, '--json'], { agent: fresh.url });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ ok: true, imported: 1 });
    expect((await client(fresh).get('/v1/kv/copied/other/k?raw')).text).toBe('not exported');
  });
});

describe('Consul\'s format written by hand', () => {
  test('a file as consul kv export writes it imports (@file, and the JSON itself as the argument)', async () => {
    const file = join(scratch, 'consul.json');
    writeFileSync(file, `[
\t{
\t\t"key": "hand/greeting",
\t\t"flags": 0,
\t\t"value": "aGVsbG8gd29ybGQ="
\t},
\t{
\t\t"key": "hand/lockish",
\t\t"flags": 3304740253564472344,
\t\t"value": ""
\t}
]
`);
    const r = await roster(['kv', 'import', `@${file}`], { agent: fresh.url });
    expect(r).toMatchObject({ code: 0, stdout: 'Imported: hand/greeting\nImported: hand/lockish\n' });
    expect((await client(fresh).get('/v1/kv/hand/greeting?raw')).text).toBe('hello world');
    expect((await client(fresh).get('/v1/kv/hand/lockish')).text).toContain('"Flags":3304740253564472344');
    const literal = await roster(['kv', 'import', '[{"Key":"hand/literal","Flags":5,"Value":"eA=="}]'], { agent: fresh.url });
    expect(literal).toMatchObject({ code: 0, stdout: 'Imported: hand/literal\n' });
    expect((await client(fresh).get('/v1/kv/hand/literal?raw')).text).toBe('x');
  });

  test('a value whose base64 is wrapped in lines (\\n or \\r\\n) imports, as Consul decodes it; a space in it is refused', async () => {
    const bytes = Buffer.alloc(200, 0xab);
    const wrapped = (eol: string) => bytes.toString('base64').match(/.{1,76}/g)!.join(eol);
    const doc = JSON.stringify([{ key: 'wrap/lf', flags: 0, value: wrapped('\n') }, { key: 'wrap/crlf', flags: 0, value: wrapped('\r\n') }]);
    const r = await roster(['kv', 'import'], { agent: fresh.url, input: doc });
    expect(r).toMatchObject({ code: 0, stdout: 'Imported: wrap/lf\nImported: wrap/crlf\n' });
    for (const key of ['wrap/lf', 'wrap/crlf']) expect(Buffer.from((await client(fresh).get(`/v1/kv/${key}`)).json<{ Value: string }[]>()[0]!.Value, 'base64')).toEqual(bytes);
    const spaced = await roster(['kv', 'import'], { agent: fresh.url, input: JSON.stringify([{ key: 'wrap/space', value: 'aGVs bG8=' }]) });
    expect([spaced.code, spaced.stderr]).toEqual([2, expect.stringContaining('"value" must be base64')]);
  });

  test.each([
    ['{"key":"bad/a"}', 'must be a JSON array'],
    ['[{"key":"bad/a","value":"aGk="},{"key":"bad/b","value":"not base64!"}]', 'entry 1 ("bad/b"): "value" must be base64'],
    ['[{"key":"bad/a","value":"aGk="},{"key":"bad/c","flags":-1,"value":""}]', 'entry 1 ("bad/c"): "flags" must be an unsigned 64-bit integer'],
    ['[{"key":"bad/a","value":"aGk="},{"key":"bad/d","flags":18446744073709551616,"value":""}]', '"flags" must be an unsigned 64-bit integer'],
    ['[{"key":"bad/a","value":"aGk="},{"value":"aGk="}]', 'entry 1: "key" must be a non-empty string'],
    ['[{"key":"bad/a","value":"aGk="},', 'the data is not JSON'],
  ])('%s exits 2 and writes nothing', async (doc, message) => {
    const r = await roster(['kv', 'import'], { agent: fresh.url, input: doc });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stdout).toBe('');
    expect((await client(fresh).get('/v1/kv/bad/?recurse')).status).toBe(404);
  });

  test('a missing file exits 2', async () => {
    const r = await roster(['kv', 'import', join(scratch, 'absent.json')], { agent: fresh.url });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('cannot read');
  });
});
