/**
 * The KV browser: a folder page (its sub-folders and keys, each key's flags, lock holder and LockIndex;
 * create a key, delete a key or the whole folder) and a key page (the value as text, JSON or base64;
 * edit with flags and a CAS-safe save; delete). Both are live: the stream's `kv_prefix` view of the
 * folder (or key) feeds them, while the forms keep what is being typed.
 */
import { confirmAction } from './confirm.ts';
import { button, facts, h, link, section, table, uiPaths } from './dom.ts';
import { deleteKey as removeKey, deleteTree, readKey, writeKey } from './kv-api.ts';
import { byteSize, bytesToBase64, crumbs, folderRows, naturalMode, parseFlags, parseValue, showValue, type FolderRow, type KvItem, type ValueMode } from './kv-model.ts';
import { errorText, explained } from './refusals.ts';
import { data, type Page } from './store.ts';

type Go = (path: string) => void;

function crumbsNav(path: string): HTMLElement {
  const parts = crumbs(path).map(([name, at]) => link(uiPaths.kv(at), name));
  return h('nav', { class: 'crumbs', 'aria-label': 'Folders' }, ...parts.flatMap((a) => [a, h('span', { class: 'sep' }, '/')]));
}

/** The stream's refusal of the page's KV subscription, as the page shows it; undefined when there is none. */
export function kvRefusal(): HTMLElement | undefined {
  if (data.kvError === undefined) return undefined;
  return h('p', { class: 'error', 'data-kv-error': '' }, `The agent does not stream this part of the store to this token: ${data.kvError}. A token needs read on every key under the prefix shown.`);
}

export function lockCell(e: { Session?: string; LockIndex: number } | undefined): HTMLElement {
  if (e?.Session === undefined) return h('span', { class: 'muted' }, e === undefined || e.LockIndex === 0 ? '—' : `free · LockIndex ${e.LockIndex}`);
  return h('span', { 'data-holder': e.Session }, link(uiPaths.session(e.Session), e.Session.slice(0, 8), { class: 'mono', title: e.Session }),
    h('span', { class: 'muted' }, ` · LockIndex ${e.LockIndex}`));
}

function folderRow(r: FolderRow, deleteKey: (key: string) => void): HTMLElement {
  const e = r.entry;
  return h('tr', { 'data-row': '', 'data-kv': r.path },
    h('td', { class: 'name' }, link(uiPaths.kv(r.path), r.folder ? `${r.name}/` : r.name)),
    h('td', {}, r.folder ? `${r.keys} key${r.keys === 1 ? '' : 's'}${r.locks > 0 ? `, ${r.locks} locked` : ''}` : `${byteSize(e?.Value ?? null)} B`),
    h('td', { class: 'mono' }, e === undefined ? '' : String(e.Flags)),
    h('td', {}, r.folder ? '' : lockCell(e)),
    h('td', { class: 'mono' }, e === undefined ? '' : String(e.ModifyIndex)),
    h('td', {}, r.folder ? '' : button('Delete', { class: 'quiet small', 'data-action': 'delete-key' }, () => deleteKey(r.path))));
}

function newKeyForm(prefix: string, go: Go): HTMLElement {
  const name = h('input', { id: 'kv-new-name', placeholder: 'name (a/b makes a folder)', autocomplete: 'off', spellcheck: 'false', 'aria-label': 'New key name' }) as HTMLInputElement;
  const value = h('input', { id: 'kv-new-value', placeholder: 'value', autocomplete: 'off', spellcheck: 'false', 'aria-label': 'New key value' }) as HTMLInputElement;
  const error = h('span', { class: 'error', id: 'kv-new-error' });
  const form = h('form', { class: 'inline', id: 'kv-new' }, name, value, h('button', { type: 'submit' }, 'Create key'), error);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const rel = name.value.trim();
    error.textContent = rel === '' || rel.startsWith('/') ? 'A key needs a name that does not start with /.' : '';
    if (error.textContent !== '') return;
    const key = prefix + rel;
    // cas=0 writes only if no such key exists, so creating never overwrites.
    confirmAction(`Create the key ${key}?`, 'Create', async () => {
      try {
        await writeKey(key, new TextEncoder().encode(value.value), 0);
      } catch (err) {
        throw explained(err, { outcome: 'Not created', access: 'write', on: key, conflict: `${key} exists already: nothing was written.` });
      }
      name.value = '';
      value.value = '';
      go(uiPaths.kv(key));
      return `Created ${key}`;
    });
  });
  return form;
}

export function folderPage(prefix: string, go: Go): Page {
  const live = h('div', {});
  const deleteKey = (key: string) => confirmAction(`Delete the key ${key}?`, 'Delete', async () => {
    await removeKey(key).catch((err: unknown) => { throw explained(err, { outcome: 'Not deleted', access: 'write', on: key }); });
    return `Deleted ${key}`;
  });
  const tools = h('div', { class: 'actions' }, newKeyForm(prefix, go));
  if (prefix !== '') {
    tools.append(button('Delete folder…', { class: 'danger', 'data-action': 'delete-folder' }, () => {
      const n = [...data.kv.keys()].filter((k) => k.startsWith(prefix)).length;
      confirmAction(`Delete ${prefix} and everything under it (${n} key${n === 1 ? '' : 's'})? This cannot be undone.`, 'Delete all', async () => {
        await deleteTree(prefix).catch((err: unknown) => { throw explained(err, { outcome: 'Not deleted', access: 'write', on: `every key under ${prefix}` }); });
        go(uiPaths.kv(crumbs(prefix.slice(0, -1)).at(-1)?.[1] ?? ''));
        return `Deleted ${prefix} (${n} key${n === 1 ? '' : 's'})`;
      });
    }));
  }
  const root = h('div', { class: 'kv', 'data-folder': prefix }, crumbsNav(prefix), tools, live);
  return {
    root, needs: ['kv'],
    update: () => {
      const refused = kvRefusal();
      if (refused !== undefined) return live.replaceChildren(refused);
      const rows = folderRows(data.kv.values(), prefix).map((r) => folderRow(r, deleteKey));
      live.replaceChildren(table('kv', ['Name', 'Size', 'Flags', 'Lock', 'ModifyIndex', ''], rows, prefix === '' ? 'The KV store is empty.' : 'Nothing under this folder.'));
    },
  };
}

// ---------------------------------------------------------------- one key

const modes: ValueMode[] = ['text', 'json', 'base64'];
const modeNames: Record<ValueMode, string> = { text: 'Text', json: 'JSON', base64: 'Base64' };

function modeTabs(onPick: (m: ValueMode) => void, prefix: string): HTMLElement {
  return h('div', { class: 'tabs', role: 'tablist' }, ...modes.map((m) => button(modeNames[m], { class: 'tab', 'data-mode': m, id: `${prefix}-${m}` }, () => onPick(m))));
}

function markTab(tabs: HTMLElement, mode: ValueMode): void {
  for (const b of tabs.querySelectorAll<HTMLElement>('[data-mode]')) b.classList.toggle('active', b.dataset.mode === mode);
}

function valueViewer(): { el: HTMLElement; show(e: KvItem | undefined): void } {
  let mode: ValueMode | undefined;
  let last: KvItem | undefined;
  const pre = h('pre', { id: 'kv-value', class: 'value' });
  const note = h('p', { class: 'muted', id: 'kv-value-note' });
  const tabs = modeTabs((m) => { mode = m; show(last); }, 'view');
  const show = (e: KvItem | undefined) => {
    last = e;
    if (e === undefined) return;
    mode ??= naturalMode(e.Value);
    markTab(tabs, mode);
    const text = showValue(e.Value, mode);
    pre.dataset.mode = mode;
    pre.textContent = text ?? '';
    note.textContent = text !== undefined ? (e.Value === null ? 'No value (null).' : '') : mode === 'json' ? 'The value is not JSON.' : 'The value is not UTF-8 text: see it as base64.';
  };
  return { el: h('div', { class: 'viewer' }, tabs, pre, note), show };
}

interface Editing { base: number; mode: ValueMode }

function editor(key: string, onDone: () => void): { el: HTMLElement; open(): Promise<void>; stale(current: KvItem | undefined): void } {
  const state: Editing = { base: 0, mode: 'text' };
  const area = h('textarea', { id: 'kv-edit', rows: '10', spellcheck: 'false', 'aria-label': 'Value' }) as HTMLTextAreaElement;
  const flags = h('input', { id: 'kv-flags', inputmode: 'numeric', autocomplete: 'off', 'aria-label': 'Flags' }) as HTMLInputElement;
  const error = h('p', { class: 'error', id: 'kv-edit-error', hidden: '' });
  const stale = h('p', { class: 'notice', id: 'kv-stale', hidden: '' });
  const tabs = modeTabs((m) => {
    // Switching the mode converts what is typed when it can; otherwise the text stays as it is.
    const bytes = parseValue(area.value, state.mode);
    if (!(bytes instanceof Error)) area.value = showValue(bytesToBase64(bytes), m) ?? area.value;
    state.mode = m;
    markTab(tabs, m);
  }, 'edit');
  const save = () => {
    const bytes = parseValue(area.value, state.mode);
    const f = parseFlags(flags.value);
    const bad = bytes instanceof Error ? bytes : f instanceof Error ? f : undefined;
    error.textContent = bad?.message ?? '';
    error.hidden = bad === undefined;
    if (bytes instanceof Error || f instanceof Error) return;
    confirmAction(`Save ${key} with flags ${f}? It is written only if the key is still at ModifyIndex ${state.base} (check-and-set).`, 'Save', async () => {
      try {
        await writeKey(key, bytes, state.base, f);
      } catch (err) {
        throw explained(err, { outcome: 'Not saved', access: 'write', on: key,
          conflict: `${key} changed since it was opened at ModifyIndex ${state.base}; nothing was overwritten. Cancel and edit again to start from the current value.` });
      }
      el.hidden = true;
      onDone();
      return `Saved ${key}`;
    });
  };
  const el = h('form', { class: 'editor', id: 'kv-editor', hidden: '' }, tabs, area,
    h('label', {}, 'Flags ', flags), stale, error,
    h('div', { class: 'actions' }, button('Save', { id: 'kv-save' }, save), button('Cancel', { class: 'quiet', id: 'kv-cancel' }, () => { el.hidden = true; onDone(); })));
  el.addEventListener('submit', (ev) => ev.preventDefault());
  const open = async () => {
    // The exact entry (uint64 Flags, the index to check against) is read over HTTP when editing starts.
    const { entry: e, flags: exact } = await readKey(key).catch((err: unknown) => { throw explained(err, { outcome: 'Cannot edit', access: 'read', on: key }); });
    state.base = e.ModifyIndex;
    state.mode = naturalMode(e.Value);
    markTab(tabs, state.mode);
    area.value = showValue(e.Value, state.mode) ?? '';
    flags.value = exact;
    error.hidden = true;
    stale.hidden = true;
    el.hidden = false;
    area.focus();
  };
  const markStale = (current: KvItem | undefined) => {
    const changed = !el.hidden && (current === undefined || current.ModifyIndex !== state.base);
    stale.hidden = !changed;
    stale.textContent = !changed ? '' : current === undefined ? 'This key was deleted since you began editing.'
      : `This key changed since you began editing (ModifyIndex ${state.base} → ${current.ModifyIndex}): saving will be refused.`;
  };
  return { el, open, stale: markStale };
}

export function keyPage(key: string, go: Go): Page {
  const live = h('div', {});
  const viewer = valueViewer();
  const actions = h('div', { class: 'actions' });
  const ed = editor(key, () => { actions.hidden = false; });
  const missing = h('p', { class: 'muted', id: 'kv-missing', hidden: '' }, 'No such key (it does not exist, or was deleted).');
  actions.append(
    button('Edit', { id: 'kv-edit-button' }, () => {
      actions.hidden = true;
      ed.open().catch((err: unknown) => { actions.hidden = false; missing.hidden = false; missing.textContent = errorText(err); });
    }),
    button('Delete…', { class: 'danger', 'data-action': 'delete-key' }, () => confirmAction(`Delete the key ${key}?`, 'Delete', async () => {
      await removeKey(key).catch((err: unknown) => { throw explained(err, { outcome: 'Not deleted', access: 'write', on: key }); });
      go(uiPaths.kv(crumbs(key).at(-1)?.[1] ?? ''));
      return `Deleted ${key}`;
    })),
    link(uiPaths.lock(key), 'Lock details'));
  const body = h('div', {}, live, section('Value', {}, viewer.el), actions, ed.el);
  const root = h('div', { class: 'kv', 'data-key': key }, crumbsNav(key), h('h2', { class: 'key mono' }, key), missing, body);
  return {
    root, needs: ['kv'],
    update: () => {
      const refused = kvRefusal();
      missing.replaceChildren(refused ?? 'No such key (it does not exist, or was deleted).');
      const e = data.kv.get(key);
      ed.stale(e);
      missing.hidden = e !== undefined;
      body.hidden = e === undefined && ed.el.hidden;
      if (e === undefined) return;
      live.replaceChildren(facts([
        ['Flags', h('span', { class: 'mono', id: 'kv-flags-shown' }, String(e.Flags))],
        ['Lock holder', lockCell(e)],
        ['LockIndex', h('span', { class: 'mono', id: 'kv-lockindex' }, String(e.LockIndex))],
        ['CreateIndex', String(e.CreateIndex)],
        ['ModifyIndex', h('span', { class: 'mono', id: 'kv-modifyindex' }, String(e.ModifyIndex))],
      ]));
      viewer.show(e);
    },
  };
}
