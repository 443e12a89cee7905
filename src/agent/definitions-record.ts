/**
 * The record of the config file's definitions kept in the data dir, `config-definitions.json`: the IDs of
 * the services and checks this agent registered from its config file (definitions-sync.ts). A start reads
 * it to deregister those the file no longer defines, as a reload does, since the registry itself does not
 * say where a registration came from. Written whole (a temporary file, flushed, renamed) at each sync.
 * A missing file is an empty record; one that cannot be read or is not such a record stops the start, as
 * the removal of services registered through the API could follow from guessing.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { ConfigError } from '../config.ts';
import { writeFileWhole } from '../wal/files.ts';
import type { RecordedIds, RecordStore } from './definitions-sync.ts';

const fileName = 'config-definitions.json';

export function dataDirRecordStore(dataDir: string, logger: Logger): RecordStore {
  const file = join(dataDir, fileName);
  return {
    read: () => readRecord(file),
    write: (ids) => writeFileWhole(file, `${JSON.stringify(ids)}\n`).catch((err: unknown) => {
      logger.warn({ err, file }, 'could not write the record of the config file\'s definitions; a start may not remove those the file drops');
    }),
  };
}

function readRecord(file: string): RecordedIds | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError(`${file}: cannot be read: ${(err as Error).message}`);
  }
  // Emptied by a filesystem that lost a new file's data in a crash: taken as no record, as a missing file.
  if (text.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const ids = parsed as Partial<RecordedIds> | undefined;
  if (ids === undefined || ids === null || !isIdList(ids.services) || !isIdList(ids.checks)) {
    throw new ConfigError(`${file} is not the record of the config file's definitions ({"services":[ids],"checks":[ids]}): fix it, or remove it if no service or check the file no longer defines is registered`);
  }
  return { services: ids.services, checks: ids.checks };
}

function isIdList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((id) => typeof id === 'string');
}
