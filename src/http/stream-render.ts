/** The stream's messages as text: events, batches, and the fingerprints that tell an item's versions apart. */
import { createHash } from 'node:crypto';
import type { Out } from './stream-conn.ts';

/** What tells an item's JSON from its next version: the text itself when short, else its length and digest. */
export function fingerprint(text: string): string {
  return text.length <= 64 ? text : `#${text.length}:${createHash('sha1').update(text).digest('base64')}`;
}

function renderOne(e: Out): string {
  return e.op === 'delete'
    ? `{"op":"delete","key":${JSON.stringify(e.key)}}`
    : `{"op":"upsert","key":${JSON.stringify(e.key)},"value":${e.value}}`;
}

export function renderBatch(subId: string, index: number, events: Out[]): string {
  return `{"type":"batch","id":${JSON.stringify(subId)},"index":${index},"events":[${events.map(renderOne).join(',')}]}`;
}

export function render(subId: string, index: number, events: Out[]): string {
  if (events.length > 1) return renderBatch(subId, index, events);
  const e = events[0]!;
  const value = e.op === 'delete' ? '' : `,"value":${e.value}`;
  return `{"type":"event","id":${JSON.stringify(subId)},"index":${index},"op":"${e.op}","key":${JSON.stringify(e.key)}${value}}`;
}
