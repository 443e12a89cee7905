// Goal: every link in the documentation resolves inside the repository. The pages read are README.md,
// docs/**/*.md, bench/README.md and bench/results/**/*.md. Each relative link (inline `[x](path#anchor)`,
// images, reference definitions) must name a file or directory that exists in the repository, and an
// anchor must match a heading of the target page by GitHub's slug rules. Links that leave the repository
// (http, https, mailto, any scheme, bare URLs in prose, or a path that climbs out) are failures: an
// outside reference that is a needed fact is written as plain text or in code. Text inside code spans and
// fenced code blocks is not read. No markdown parser is among the dependencies, so a small reader does it.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, test } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

/** The markdown pages checked, relative to the repository root. */
function pages(): string[] {
  const found: string[] = ['README.md', 'bench/README.md'];
  const walk = (dir: string): void => {
    if (!existsSync(join(root, dir))) return;
    for (const name of readdirSync(join(root, dir)).sort()) {
      const path = join(dir, name);
      if (statSync(join(root, path)).isDirectory()) walk(path);
      else if (name.endsWith('.md')) found.push(path);
    }
  };
  walk('docs');
  walk('bench/results');
  return found;
}

/** The page's text with fenced code blocks and inline code spans blanked (line count kept). */
function prose(markdown: string): string[] {
  const out: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const open = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence !== undefined) {
      if (open && open[1]![0] === fence[0] && open[1]!.length >= fence.length) fence = undefined;
      out.push('');
    } else if (open) {
      fence = open[1];
      out.push('');
    } else {
      out.push(line.replace(/(`+)[^`]*?\1/g, ''));
    }
  }
  return out;
}

/** GitHub's anchor for a heading: inline markup dropped, lower case, punctuation removed, spaces to '-'. */
function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor the page's headings define, with GitHub's `-1`, `-2` suffixes for repeated headings. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const open = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence !== undefined) {
      if (open && open[1]![0] === fence[0] && open[1]!.length >= fence.length) fence = undefined;
      continue;
    }
    if (open) { fence = open[1]; continue; }
    const h = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const base = slug(h[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    result.add(n === 0 ? base : `${base}-${n}`);
  }
  return result;
}

interface Link { line: number; target: string }

/** The links of a page: inline links and images, reference definitions, autolinks and bare URLs. */
function links(markdown: string): Link[] {
  const found: Link[] = [];
  prose(markdown).forEach((text, i) => {
    const line = i + 1;
    for (const m of text.matchAll(/!?\[(?:[^\][]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)) {
      found.push({ line, target: m[1]! });
    }
    const def = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$/.exec(text);
    if (def) found.push({ line, target: def[1]! });
    const withoutInline = text.replace(/!?\[(?:[^\][]|\[[^\]]*\])*\]\([^)]*\)/g, '');
    for (const m of withoutInline.matchAll(/<([a-z][a-z0-9+.-]*:[^>\s]*)>|\b((?:https?|ftp):\/\/[^\s)>]*[^\s)>.,;:!?'"]|www\.[^\s)>]*[^\s)>.,;:!?'"])/gi)) {
      found.push({ line, target: m[1] ?? m[2]! });
    }
  });
  return found;
}

/** Why a link of page `from` (relative to the root) is broken, or undefined when it resolves. */
function problem(from: string, target: string, read: (path: string) => string | undefined): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//') || target.startsWith('www.')) {
    return 'points outside the repository (write it as plain text)';
  }
  if (target === '') return 'empty link';
  const hash = target.indexOf('#');
  const path = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const file = path === '' ? from : relative(root, resolve(root, dirname(from), path.startsWith('/') ? `.${path}` : path));
  if (file.startsWith('..') || file.split(sep).includes('node_modules')) return 'points outside the repository';
  if (!existsSync(join(root, file))) return `no such file: ${file}`;
  if (anchor === undefined || anchor === '') return undefined;
  const text = read(file);
  if (text === undefined) return `an anchor on a page that is not markdown: ${file}`;
  return anchors(text).has(anchor) ? undefined : `no heading with anchor #${anchor} in ${file}`;
}

function readMarkdown(path: string): string | undefined {
  const full = join(root, path);
  return path.endsWith('.md') && existsSync(full) && statSync(full).isFile() ? readFileSync(full, 'utf8') : undefined;
}

describe('documentation links', () => {
  test('the reader: slugs, anchors, code is skipped, outside links are refused', () => {
    expect(slug('The `roster` command')).toBe('the-roster-command');
    expect(slug('Guarantees (and what is not promised)')).toBe('guarantees-and-what-is-not-promised');
    expect(slug('Reference: decisions where the specs are silent')).toBe('reference-decisions-where-the-specs-are-silent');
    expect(slug('Compatibility with Consul clients (`--dialect consul`)')).toBe('compatibility-with-consul-clients---dialect-consul');
    expect([...anchors('# A\n## A\n```\n# not a heading\n```\n### b_c d\n')]).toEqual(['a', 'a-1', 'b_c-d']);
    const page = 'See [x](docs/a.md#b) and ![i](ui.png "t").\n`[no](code.md)`\n```\n[no](block.md)\n```\n'
      + '[ref]: other.md\n<https://example.org> and http://example.org/x, [out](https://example.org)\n';
    expect(links(page).map((l) => `${l.line}:${l.target}`)).toEqual([
      '1:docs/a.md#b', '1:ui.png', '6:other.md', '7:https://example.org', '7:https://example.org', '7:http://example.org/x',
    ]);
    const none = (): string | undefined => undefined;
    expect(problem('README.md', 'https://example.org', none)).toMatch(/outside/);
    expect(problem('docs/a.md', '../../elsewhere.md', none)).toMatch(/outside/);
    expect(problem('README.md', 'docs/no-such-page.md', none)).toMatch(/no such file/);
    expect(problem('README.md', 'README.md#no-such-heading', readMarkdown)).toMatch(/no heading/);
    expect(problem('README.md', '#roster', readMarkdown)).toBeUndefined();
  });

  test('every link in README.md, docs/, bench/README.md and bench/results/ resolves inside the repository', () => {
    const broken: string[] = [];
    let count = 0;
    for (const page of pages()) {
      for (const { line, target } of links(readFileSync(join(root, page), 'utf8'))) {
        count++;
        const why = problem(page, target, readMarkdown);
        if (why) broken.push(`${page}:${line}: ${target} — ${why}`);
      }
    }
    expect(broken).toEqual([]);
    expect(count).toBeGreaterThan(20);
  });
});
