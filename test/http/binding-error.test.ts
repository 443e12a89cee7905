// Goal: when the uWebSockets.js binding does not load, the message names the Node.js version and ABI, the
// C library the process runs with, the glibc the build needs when the loader says so, and what to do, and
// points at the documented support matrix. The message is built from plain values, so every case (glibc
// too old, musl, no build for the ABI, a bad ROSTER_UWS_MODULE) is checked here without the binding.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { BindingUnavailable, bindingErrorMessage, hostPlatform, loaderReason, platformDocs, type HostPlatform } from '../../src/http/binding-error.ts';
import { loadUws } from '../../src/http/uws.ts';
import { repoRoot } from '../support/agent.ts';

const preamble = 'This version of uWS.js supports only Node.js versions 16, 18, 20, 21, 22, 24 and 25 on (glibc) Linux, macOS and Windows, '
  + 'on Tier 1 platforms (https://github.com/nodejs/node/blob/master/BUILDING.md#platform-list).\n\n';
const glibcTooOld = `${preamble}Error: /lib/x86_64-linux-gnu/libc.so.6: version \`GLIBC_2.38' not found `
  + '(required by /app/node_modules/uWebSockets.js/uws_linux_x64_137.node)';
const node24OnDebian12: HostPlatform = { node: 'v24.21.0', abi: '137', os: 'linux', arch: 'x64', glibc: '2.36' };

describe('the message', () => {
  test('glibc older than the build needs: Node.js version, ABI, both glibc versions and three ways out', () => {
    const msg = bindingErrorMessage(node24OnDebian12, glibcTooOld);
    const [first, todo, docs, ...more] = msg.split('\n');
    expect(more).toEqual([]);
    expect(first).toMatch(/^the uWebSockets\.js native binding did not load on node v24\.21\.0 \(ABI 137, linux-x64\) with glibc 2\.36: /);
    expect(first).toContain('the bundled build for ABI 137 needs glibc 2.38');
    expect(first).toContain('uws_linux_x64_137.node');
    expect(todo).toMatch(/Node\.js 20 on this host/);
    expect(todo).toMatch(/glibc 2\.38 or later \(Debian 13/);
    expect(todo).toMatch(/ROSTER_UWS_MODULE/);
    expect(docs).toBe(`  Supported platforms: ${platformDocs}.`);
    expect(msg).not.toContain('This version of uWS.js');
  });

  test('a C library other than glibc (musl): says so and that the builds are for glibc', () => {
    const msg = bindingErrorMessage({ ...node24OnDebian12, glibc: undefined },
      `${preamble}Error: Error loading shared library ld-linux-x86-64.so.2: No such file or directory (needed by /app/uws_linux_x64_137.node)`);
    expect(msg).toMatch(/with a C library other than glibc \(musl\?\): Error loading shared library ld-linux-x86-64\.so\.2/);
    expect(msg).toMatch(/built for glibc only/);
  });

  test('no build for the ABI (a Node.js line the package does not cover): names the ABI and the lines that work', () => {
    const msg = bindingErrorMessage({ node: 'v26.1.0', abi: '147', os: 'linux', arch: 'x64', glibc: '2.41' },
      `${preamble}Error: Cannot find module './uws_linux_x64_147.node'\nRequire stack:\n- /app/node_modules/uWebSockets.js/uws.js\n- /app/src/http/uws.js`);
    expect(msg).toContain('on node v26.1.0 (ABI 147, linux-x64) with glibc 2.41: the bundled package has no build for linux-x64 with Node.js ABI 147');
    expect(msg).toContain('Use Node.js 20, 22 or 24');
    expect(msg).not.toContain('Require stack');
  });

  test('ROSTER_UWS_MODULE that does not load: names the variable and its value', () => {
    const msg = bindingErrorMessage(node24OnDebian12, "Cannot find module '/opt/uws'\nRequire stack:\n- /app/src/http/uws.js", '/opt/uws');
    expect(msg).toContain("with glibc 2.36: ROSTER_UWS_MODULE=/opt/uws: Cannot find module '/opt/uws'.");
    expect(msg).toMatch(/unset it to use the bundled one/);
  });

  test('macOS: no C library named', () => {
    const msg = bindingErrorMessage({ node: 'v22.23.3', abi: '127', os: 'darwin', arch: 'arm64', glibc: undefined }, 'Error: dlopen failed');
    expect(msg.split('\n')[0]).toBe('the uWebSockets.js native binding did not load on node v22.23.3 (ABI 127, darwin-arm64): dlopen failed.');
  });

  test("the loader's reason: the package's preamble, the Error: prefix and the require stack dropped", () => {
    expect(loaderReason(glibcTooOld)).toMatch(/^\/lib\/x86_64-linux-gnu\/libc\.so\.6: version `GLIBC_2\.38' not found/);
    expect(loaderReason('   ')).toBe('');
  });

  test('points at a section that exists', () => {
    expect(platformDocs).toBe('docs/running.md, section "Platform support"');
    expect(readFileSync(join(repoRoot, 'docs/running.md'), 'utf8')).toMatch(/^## Platform support$/m);
  });
});

describe('on this process', () => {
  const saved = process.env.ROSTER_UWS_MODULE;
  afterEach(() => {
    if (saved === undefined) delete process.env.ROSTER_UWS_MODULE;
    else process.env.ROSTER_UWS_MODULE = saved;
  });

  test("hostPlatform reads Node.js's version, ABI and glibc", () => {
    const host = hostPlatform();
    expect(host).toMatchObject({ node: process.version, abi: process.versions.modules, os: process.platform, arch: process.arch });
    if (process.platform === 'linux') expect(host.glibc).toMatch(/^\d+\.\d+$/);
  });

  test('loadUws turns a module that does not load into BindingUnavailable with the message', () => {
    process.env.ROSTER_UWS_MODULE = '/nonexistent/uws';
    let caught: unknown;
    try {
      loadUws();
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(BindingUnavailable);
    expect((caught as Error).message).toMatch(/^the uWebSockets\.js native binding did not load on node v\d+.*: ROSTER_UWS_MODULE=\/nonexistent\/uws: Cannot find module '\/nonexistent\/uws'\./);
  });
});
