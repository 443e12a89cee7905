/**
 * What the dashboard's browser tests share: Debian's Chromium launched headless through playwright-core,
 * a page opened on an agent and waiting for the live stream, checked HTTP calls, and the screenshots
 * under docs/, written only when ROSTER_UI_SCREENSHOTS=1 asks for them (a normal run never rewrites a
 * tracked file: `ROSTER_UI_SCREENSHOTS=1 npx vitest run test/ui` refreshes them on purpose).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { client, repoRoot, startAgent, type Agent, type AgentOptions } from '../support/agent.ts';

/** Debian's Chromium (package chromium; test/global-setup.ts installs it). */
export const chromiumPath = '/usr/bin/chromium';
/** Bounded waits for things that should happen at once (generous: the machine's cores are shared). */
export const waitMs = 10_000;

export function launch(): Promise<Browser> {
  // --no-sandbox: the tests run as root, where Chromium refuses its sandbox.
  return chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox'], timeout: 30_000 });
}

/** A page at `path`, live on the stream; `token` is put in localStorage first, as the Token button does. */
export async function openPage(browser: Browser, base: string, path = '/ui/', width = 1280, token?: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height: 800 } });
  page.setDefaultTimeout(waitMs);
  // A string script: it runs in the page, where localStorage is (this file is compiled without the DOM).
  if (token !== undefined) await page.addInitScript(`localStorage.setItem('roster.token', ${JSON.stringify(token)})`);
  await page.goto(base + path);
  await page.waitForSelector('#connection[data-state="live"]');
  return page;
}

/** One agent and one Chromium for the enclosing suite; `agent`, `c` and `browser` are set in its beforeAll. */
export interface AgentAndBrowser {
  agent: Agent;
  c: ReturnType<typeof client>;
  browser: Browser;
  /** Opens a page at `path` on the agent (live on the stream, `token` as in openPage), runs `body`, closes the page. */
  withPage(path: string, body: (page: Page) => Promise<void>, token?: string): Promise<void>;
}

/**
 * Starts an agent (with `o`) and launches Chromium before the enclosing suite's tests, then runs `setup`;
 * closes the browser, stops the agent and removes its data after them.
 */
export function useAgentAndBrowser(setup?: (ui: AgentAndBrowser) => Promise<void>, o: AgentOptions = {}): AgentAndBrowser {
  const ui = {
    async withPage(path: string, body: (page: Page) => Promise<void>, token?: string): Promise<void> {
      const page = await openPage(ui.browser, ui.agent.url, path, 1280, token);
      try {
        await body(page);
      } finally {
        await page.close();
      }
    },
  } as AgentAndBrowser;
  beforeAll(async () => {
    ui.agent = await startAgent(o);
    ui.c = client(ui.agent);
    ui.browser = await launch();
    await setup?.(ui);
  });
  afterAll(async () => {
    await ui.browser?.close();
    await ui.agent?.stop();
    ui.agent?.cleanup();
  });
  return ui;
}

export async function ok(r: Promise<{ status: number; text: string }>, what: string): Promise<string> {
  const res = await r;
  if (res.status !== 200) throw new Error(`${what}: ${res.status} ${res.text}`);
  return res.text;
}

/** Writes docs/<name>.png only when ROSTER_UI_SCREENSHOTS=1. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.ROSTER_UI_SCREENSHOTS !== '1') return;
  mkdirSync(join(repoRoot, 'docs'), { recursive: true });
  await page.screenshot({ path: join(repoRoot, 'docs', `${name}.png`), fullPage: true });
}

/** Clicks Confirm in the confirmation dialog after checking it asks `question` (a part of it). */
export async function confirm(page: Page, question: string): Promise<void> {
  await page.waitForSelector('#confirm[open]');
  const asked = await page.textContent('#confirm-question');
  if (!asked?.includes(question)) throw new Error(`the dialog asks "${asked}", not "${question}"`);
  await page.click('#confirm-ok');
}

/** Confirms, then expects the dialog to stay open with an error containing `message`; closes it. */
export async function confirmRefused(page: Page, question: string, message: string): Promise<string> {
  await confirm(page, question);
  await page.waitForSelector('#confirm-error:not([hidden])');
  const text = (await page.textContent('#confirm-error')) ?? '';
  if (!text.includes(message)) throw new Error(`the dialog's error is "${text}", not one with "${message}"`);
  await page.click('#confirm-cancel');
  await page.waitForSelector('#confirm[open]', { state: 'detached' });
  return text;
}
