/**
 * The floor for the lock rows of `npm run bench:compare`: the least a durable lock server can do per pair
 * on this machine, in Roster's runtime and HTTP library, speaking the calls the bench's Roster driver makes.
 * It is a yardstick, not a registry: locks, sessions and queued acquires (bench/floor/locks.ts), nothing
 * else. What it does per write is what any durable lock server behind HTTP/1.1 must do, done the way Roster
 * does it (bench/floor/node.ts):
 *
 * * the request is read by uWebSockets.js (the same package and native build as Roster's front end);
 * * a write pauses its connection until it is answered (Roster's guard against pipelined requests);
 * * writes are group-committed to a log, applied in log order, and each request is answered in one corked
 *   write once its entry is applied.
 *
 * Two logs, one per mode:
 *
 * * `node --import tsx bench/floor-server.ts <data dir>`: one node, its log a file (bench/floor/file-log.ts:
 *   one frame written in place and one fdatasync per commit), `<data dir>/floor.log`;
 * * `node --import tsx bench/floor-server.ts --nats <url,url,…> --node <name>`: one node of the cluster
 *   floor, its log a JetStream stream R3 every node reads whole (bench/floor/stream-log.ts), written and
 *   read as Roster's cluster does. Start one per node, each with its own name, against the same servers.
 *
 * It prints `floor listening http://127.0.0.1:<port>` once it serves, and stops on SIGTERM or SIGINT.
 */
import { join } from 'node:path';
import { FileLog } from './floor/file-log.ts';
import { FloorNode } from './floor/node.ts';
import { StreamLog } from './floor/stream-log.ts';

function fatal(err: unknown): never {
  process.stderr.write(`floor: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
}

const usage = 'usage: floor-server.ts <data dir> | floor-server.ts --nats <url,url,…> --node <name>';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const nats = args[0] === '--nats' && args[2] === '--node' ? { servers: (args[1] ?? '').split(','), name: args[3] } : undefined;
  if (nats === undefined ? args.length !== 1 : (args.length !== 4 || nats.name === undefined || nats.servers[0] === '')) throw new Error(usage);
  const node = new FloorNode(nats?.name ?? 'floor');
  const apply = node.table.apply.bind(node.table);
  const log = nats === undefined
    ? await FileLog.open(join(args[0]!, 'floor.log'), apply, fatal)
    : await StreamLog.open(nats.servers, nats.name!, apply, fatal);
  const server = await node.listen(log);
  process.stdout.write(`floor listening http://127.0.0.1:${server.port}\n`);
  const stop = () => {
    server.close();
    void log.close().finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch(fatal);
