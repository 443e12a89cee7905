/** Snapshot files as a script that edits one would leave them: changed, then signed again. */
import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';

/** The file with its payload's state data changed by `edit` and its trailer recomputed: a checksum that holds. */
export function resignedSnapshot(file: Buffer, edit: (data: Record<string, any>) => void): Buffer {
  const [header, payload] = gunzipSync(file).toString('utf8').split('\n');
  const p = JSON.parse(payload!) as { data: Record<string, any> };
  edit(p.data);
  const body = `${header}\n${JSON.stringify(p)}\n`;
  const sha256 = createHash('sha256').update(body).digest('hex');
  return gzipSync(`${body}${JSON.stringify({ sha256, bytes: Buffer.byteLength(body) })}\n`);
}
