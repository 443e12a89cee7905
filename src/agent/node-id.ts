/**
 * The node's ID, kept in the data dir's `node-id` so a restarted node keeps its identity (Consul's node-id
 * file). It is written once, whole: a temporary file, flushed, renamed into place, the directory flushed,
 * so a crash leaves no file or the whole one. An empty file (from a filesystem that lost the data of a file
 * created just before a crash) is given a new ID, as a missing one is. Any other text that is not a UUID
 * stops the start: it was put there by hand, and choosing another ID would make this node another node.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../config.ts';
import { writeFileWhole } from '../wal/files.ts';

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function nodeIdOf(dataDir: string): Promise<string> {
  const file = join(dataDir, 'node-id');
  let text: string | undefined;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new ConfigError(`${file}: cannot be read: ${(err as Error).message}`);
  }
  if (text !== undefined && text !== '') {
    if (uuid.test(text)) return text;
    const shown = JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
    throw new ConfigError(`${file} holds ${shown}, which is not a node ID (a UUID): put back the ID this node had, or remove the file to give the node a new one`);
  }
  const id = randomUUID();
  await writeNodeId(dataDir, id);
  return id;
}

/** Writes `id` to the data dir's `node-id`, whole (also when the data dir was made again while the agent ran). */
export async function writeNodeId(dataDir: string, id: string): Promise<void> {
  await writeFileWhole(join(dataDir, 'node-id'), `${id}\n`);
}
