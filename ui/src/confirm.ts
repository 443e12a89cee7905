/**
 * Every action of the dashboard goes through one confirmation dialog: it names what will happen, runs
 * the action only on Confirm, and on a refusal keeps the dialog open with the server's message (so a
 * token that lacks the right shows the ACL error, and nothing changed). A success closes it and says
 * what was done in the page's flash line.
 */
import { errorText } from './api.ts';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

let running: (() => Promise<string>) | undefined;

export function wireConfirm(): void {
  const dialog = $<HTMLDialogElement>('confirm');
  $('confirm-cancel').addEventListener('click', () => dialog.close());
  $('confirm-ok').addEventListener('click', () => void confirmed());
}

/** Asks `question`; on Confirm runs `run`, whose resolved text is shown as done. */
export function confirmAction(question: string, label: string, run: () => Promise<string>): void {
  const dialog = $<HTMLDialogElement>('confirm');
  running = run;
  $('confirm-question').textContent = question;
  $('confirm-ok').textContent = label;
  $<HTMLButtonElement>('confirm-ok').disabled = false;
  $<HTMLButtonElement>('confirm-ok').hidden = false;
  $('confirm-cancel').textContent = 'Cancel';
  showError('');
  if (!dialog.open) dialog.showModal();
}

async function confirmed(): Promise<void> {
  const run = running;
  if (run === undefined) return;
  const ok = $<HTMLButtonElement>('confirm-ok');
  ok.disabled = true;
  try {
    const done = await run();
    running = undefined;
    $<HTMLDialogElement>('confirm').close();
    flash(done);
  } catch (err) {
    // The action is spent: only Close remains, so a refused action is not retried by a second click.
    running = undefined;
    ok.hidden = true;
    $('confirm-cancel').textContent = 'Close';
    showError(errorText(err));
  }
}

function showError(text: string): void {
  const el = $('confirm-error');
  el.textContent = text;
  el.hidden = text === '';
}

let flashTimer: number | undefined;

/** A short line under the title saying what the last action did. */
export function flash(text: string): void {
  const el = $('flash');
  el.textContent = text;
  el.hidden = text === '';
  window.clearTimeout(flashTimer);
  if (text !== '') flashTimer = window.setTimeout(() => flash(''), 8000);
}
