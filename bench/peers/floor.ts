/**
 * The floor server of bench:compare (bench/floor-server.ts), started as its own process with a fresh
 * data dir for its log file, which is removed when it stops.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startScriptServer, type HelloServer } from './reads.ts';

export interface FloorServer extends HelloServer {
  dataDir: string;
  stop(): Promise<void>;
}

export async function startFloor(dataParent: string): Promise<FloorServer> {
  const dataDir = mkdtempSync(join(dataParent, 'roster-floor-'));
  try {
    const s = await startScriptServer('floor', 'bench/floor-server.ts', [dataDir]);
    return {
      ...s, dataDir,
      stop: async () => {
        await s.child.stop();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}
