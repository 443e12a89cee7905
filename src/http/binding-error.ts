/**
 * Why the uWebSockets.js native binding did not load, told as one message an operator can act on: the
 * Node.js version and ABI, the C library the process runs with, the glibc the build needs when the
 * dynamic loader names it, and what to do. Pure: the host's facts come in as a value (`hostPlatform`
 * reads them from the running process), so the message is tested without the binding.
 */

/** Where the supported Node.js and C library pairs are listed. */
export const platformDocs = 'docs/running.md, section "Platform support"';

/** The binding did not load: the start is refused for a reason the operator must fix (exit code 2). */
export class BindingUnavailable extends Error {
  override name = 'BindingUnavailable';
}

/** The facts the message names. */
export interface HostPlatform {
  /** `process.version`, e.g. "v24.21.0". */
  node: string;
  /** The Node.js ABI, `process.versions.modules` (the number in the binding's file name). */
  abi: string;
  os: string;
  arch: string;
  /** glibc's version the process runs with; undefined where the C library is not glibc (musl) or unknown. */
  glibc: string | undefined;
}

interface ReportHeader { header?: { glibcVersionRuntime?: unknown } }

/** The running process's platform; glibc's version from Node's diagnostic report (absent on musl). */
export function hostPlatform(): HostPlatform {
  let glibc: string | undefined;
  if (process.platform === 'linux') {
    const runtime = (process.report?.getReport() as ReportHeader | undefined)?.header?.glibcVersionRuntime;
    glibc = typeof runtime === 'string' ? runtime : undefined;
  }
  return { node: process.version, abi: process.versions.modules, os: process.platform, arch: process.arch, glibc };
}

/**
 * The line of the loader's error that says what failed: the package's own preamble ("This version of
 * uWS.js supports only ..."), the require stack and the `Error:` prefix are dropped.
 */
export function loaderReason(error: string): string {
  const lines = error.split('\n').map((l) => l.trim().replace(/^Error: /, ''))
    .filter((l) => l !== '' && !l.startsWith('This version of uWS.js') && l !== 'Require stack:' && !l.startsWith('- '));
  return lines[0] ?? error.trim();
}

/** The C library as the message names it. */
function libcOf(host: HostPlatform): string {
  if (host.glibc !== undefined) return ` with glibc ${host.glibc}`;
  return host.os === 'linux' ? ' with a C library other than glibc (musl?)' : '';
}

/** What failed and what to do about it, for the loader's reason. */
function diagnose(host: HostPlatform, reason: string, override: string | undefined): { why: string; todo: string } {
  if (override !== undefined) {
    return {
      why: `ROSTER_UWS_MODULE=${override}: ${reason}`,
      todo: 'Point ROSTER_UWS_MODULE at a uWebSockets.js build for this Node.js and platform, or unset it to use the bundled one.',
    };
  }
  const needs = /GLIBC_(\d+\.\d+)' not found/.exec(reason)?.[1];
  if (needs !== undefined) {
    return {
      why: `the bundled build for ABI ${host.abi} needs glibc ${needs} (${reason})`,
      todo: `Run Node.js 20 on this host, or run on a host or base image with glibc ${needs} or later ` +
        '(Debian 13, Ubuntu 24.04, Fedora 39; the image node:24-trixie-slim), ' +
        'or set ROSTER_UWS_MODULE to a uWebSockets.js build for this pair.',
    };
  }
  if (host.os === 'linux' && host.glibc === undefined) {
    return {
      why: reason,
      todo: 'uWebSockets.js is built for glibc only: run on a glibc system or image (Debian, Ubuntu, Fedora; not Alpine), ' +
        'or set ROSTER_UWS_MODULE to a build for this C library.',
    };
  }
  if (/Cannot find module .*uws_[a-z0-9]+_[a-z0-9]+_\d+\.node/.test(reason)) {
    return {
      why: `the bundled package has no build for ${host.os}-${host.arch} with Node.js ABI ${host.abi} (${reason})`,
      todo: 'Use Node.js 20, 22 or 24, or set ROSTER_UWS_MODULE to a uWebSockets.js build for this pair.',
    };
  }
  return { why: reason, todo: 'Set ROSTER_UWS_MODULE to a uWebSockets.js build for this Node.js and platform.' };
}

/**
 * The message, in three lines: what did not load on which Node.js and C library and why; what to do;
 * where the supported platforms are listed. `override` is ROSTER_UWS_MODULE when it was set.
 */
export function bindingErrorMessage(host: HostPlatform, loaderError: string, override?: string): string {
  const { why, todo } = diagnose(host, loaderReason(loaderError), override);
  return `the uWebSockets.js native binding did not load on node ${host.node} ` +
    `(ABI ${host.abi}, ${host.os}-${host.arch})${libcOf(host)}: ${why}.\n` +
    `  ${todo}\n` +
    `  Supported platforms: ${platformDocs}.`;
}
