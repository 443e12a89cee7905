/**
 * Sortable columns for every table of the dashboard: a click on a heading sorts the rows by that
 * column (again: the other way), and the order survives the live re-renders. Cells sort by their
 * `data-sort` attribute when they have one (times, indexes), else by their text; numbers as numbers.
 */

export interface SortState { column: number; descending: boolean }

function cellKey(row: HTMLElement, column: number): string {
  const cell = row.children[column] as HTMLElement | undefined;
  return cell?.dataset.sort ?? (cell?.textContent ?? '').trim();
}

function compareKeys(a: string, b: string): number {
  const x = Number(a);
  const y = Number(b);
  if (a !== '' && b !== '' && Number.isFinite(x) && Number.isFinite(y)) return x - y;
  return a.localeCompare(b);
}

/** Orders the rows of each table under `container` by `state`, and marks the sorted heading. */
export function applySort(container: HTMLElement, state: SortState | undefined): void {
  for (const table of container.querySelectorAll('table')) {
    const heads = [...table.querySelectorAll<HTMLElement>('thead th')];
    heads.forEach((th, i) => {
      th.classList.add('sortable');
      th.setAttribute('aria-sort', state?.column === i ? (state.descending ? 'descending' : 'ascending') : 'none');
    });
    if (state === undefined) continue;
    const body = table.querySelector('tbody');
    if (body === null) continue;
    const rows = [...body.querySelectorAll<HTMLElement>(':scope > tr[data-row]')];
    // A stable sort on the page's own order: equal keys keep it.
    rows.sort((a, b) => compareKeys(cellKey(a, state.column), cellKey(b, state.column)) * (state.descending ? -1 : 1));
    body.append(...rows);
  }
}

/** The state after a click on heading `column`. */
export function nextSort(state: SortState | undefined, column: number): SortState {
  return state?.column === column ? { column, descending: !state.descending } : { column, descending: false };
}
