// Goal: `roster snapshot save <path>` replaces only a regular file. A symbolic link, a named pipe, a device
// (a private copy of /dev/null, never /dev itself) or a directory at the path is refused with one
// `roster: cannot write …` line and exit 1, and left as it was; a path under a regular file fails the same
// way (ENOTDIR), not with a stack trace. No temporary file is left behind.
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { closedPort, roster, useAgentAndScratch } from './support.ts';

const cli = useAgentAndScratch('roster-cli-snap-target-');
const save = (path: string) => roster(['snapshot', 'save', path], { agent: cli.agent.url });

/** A character device like /dev/null (1, 3) made in the scratch directory; false where mknod is not allowed. */
function privateNull(path: string): boolean {
  try {
    execFileSync('mknod', ['-m', '666', path, 'c', '1', '3'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Whether this process may make device nodes (root, outside a restricting container). */
const mayMknod = ((): boolean => {
  const dir = mkdtempSync(join(tmpdir(), 'roster-mknod-'));
  try {
    return privateNull(join(dir, 'null'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
})();

/** The entries of the scratch directory that are not in `before`: a left temporary file shows here. */
function added(before: string[]): string[] {
  return readdirSync(cli.scratch).filter((n) => !before.includes(n));
}

describe('roster snapshot save: the target', () => {
  test('a regular file is replaced by the snapshot; a new path is created', async () => {
    writeFileSync(cli.file('old.snap'), 'old');
    expect((await save(cli.file('old.snap'))).code).toBe(0);
    expect(readFileSync(cli.file('old.snap')).subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    expect((await save(cli.file('new.snap'))).code).toBe(0);
    expect(lstatSync(cli.file('new.snap')).isFile()).toBe(true);
  });

  test('a symbolic link (to a file, or to /proc/self/fd/1) is refused; link and file are left as they were', async () => {
    writeFileSync(cli.file('target'), 'keep');
    symlinkSync(cli.file('target'), cli.file('link'));
    symlinkSync('/proc/self/fd/1', cli.file('stdout'));
    const before = readdirSync(cli.scratch);
    const r = await save(cli.file('link'));
    expect([r.code, r.stdout]).toEqual([1, '']);
    expect(r.stderr).toBe(`roster: cannot write ${cli.file('link')}: it is a symbolic link (to ${cli.file('target')}); `
      + 'snapshot save replaces only a regular file, give the path of the file itself\n');
    expect(lstatSync(cli.file('link')).isSymbolicLink()).toBe(true);
    expect(cli.read('target')).toBe('keep');
    const out = await save(cli.file('stdout'));
    expect([out.code, out.stdout, out.stderr]).toEqual([1, '', expect.stringMatching(/^roster: cannot write .*stdout: it is a symbolic link \(to \/proc\/self\/fd\/1\); [^\n]*\n$/)]);
    expect(lstatSync(cli.file('stdout')).isSymbolicLink()).toBe(true);
    expect(added(before)).toEqual([]);
  });

  test('a named pipe and a directory are refused and left as they were', async () => {
    execFileSync('mkfifo', [cli.file('pipe')]);
    mkdirSync(cli.file('dir'));
    const before = readdirSync(cli.scratch);
    const pipe = await save(cli.file('pipe'));
    expect([pipe.code, pipe.stderr]).toEqual([1, `roster: cannot write ${cli.file('pipe')}: it is a named pipe, not a regular file; `
      + 'snapshot save writes a new file or replaces a regular one\n']);
    expect(lstatSync(cli.file('pipe')).isFIFO()).toBe(true);
    const dir = await save(cli.file('dir'));
    expect([dir.code, dir.stderr]).toEqual([1, expect.stringMatching(/^roster: cannot write .*dir: it is a directory, not a regular file; [^\n]*\n$/)]);
    expect(added(before)).toEqual([]);
  });

  test.skipIf(!mayMknod)('a device node is refused and stays a device', async () => {
    expect(privateNull(cli.file('null'))).toBe(true);
    const r = await save(cli.file('null'));
    expect([r.code, r.stderr]).toEqual([1, expect.stringMatching(/^roster: cannot write .*null: it is a character device, not a regular file; [^\n]*\n$/)]);
    expect(lstatSync(cli.file('null')).isCharacterDevice()).toBe(true);
  });

  test('a path under a regular file: one line, ENOTDIR, exit 1', async () => {
    writeFileSync(cli.file('plain'), 'x');
    const r = await save(join(cli.file('plain'), 'x.snap'));
    expect([r.code, r.stdout, r.stderr]).toEqual([1, '', `roster: cannot write ${join(cli.file('plain'), 'x.snap')}: ENOTDIR\n`]);
    // Found before the agent is asked for a snapshot: the same line with no agent to ask.
    const early = await roster(['snapshot', 'save', join(cli.file('plain'), 'x.snap')], { agent: `127.0.0.1:${await closedPort()}` });
    expect([early.code, early.stderr]).toEqual([r.code, r.stderr]);
    const missing = await save(join(cli.file('no-such-dir'), 'x.snap'));
    expect([missing.code, missing.stderr]).toEqual([1, `roster: cannot write ${join(cli.file('no-such-dir'), 'x.snap')}: ENOENT\n`]);
  });
});
