/**
 * The composition root: the one file that knows every layer. It reads the settings, opens the
 * embedded log in the data dir, starts the runtime (recovery, TTL owners) and the HTTP front end,
 * logs `roster listening http=<url>` when ready, and shuts down cleanly on SIGTERM/SIGINT.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import { ConfigError, loadConfig, usage, type Config } from './config.ts';
import { apiRouter, loadUws, startHttpServer, type ApiContext, type HttpServer } from './http/index.ts';
import { SystemClock } from './ports/clock.ts';
import { Runtime } from './runtime/index.ts';
import { WalLog } from './wal/index.ts';

const version = '0.1.0';

/** The node id lives beside the log so a restarted node keeps its identity. */
function nodeIdOf(dataDir: string): string {
  const file = join(dataDir, 'node-id');
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    const id = randomUUID();
    writeFileSync(file, `${id}\n`);
    return id;
  }
}

async function run(config: Config): Promise<void> {
  const logger = pino({ level: config.logLevel, base: { node: config.nodeName } });
  loadUws(); // fail now, with a clear message, if the native binding does not load
  const dataDir = resolve(config.dataDir);
  mkdirSync(dataDir, { recursive: true });
  const clock = new SystemClock();
  const log = new WalLog({ dir: dataDir, clock, logger });
  let http: HttpServer | undefined;
  const runtime = new Runtime({
    log, clock, logger, nodeName: config.nodeName, nodeId: nodeIdOf(dataDir), address: config.httpHost,
    snapshotEveryEntries: config.snapshotEveryEntries,
    onFatal: (err) => {
      logger.fatal({ err }, 'stopping: the log cannot be applied');
      http?.close();
      process.exit(70);
    },
  });
  await runtime.start();
  const ctx: ApiContext = {
    runtime, dialect: config.dialect, datacenter: config.datacenter, nodeName: config.nodeName,
    sessionTtlMsMin: config.sessionTtlMsMin, version, startedAtMs: Date.now(),
    serverAddress: `${config.httpHost}:${config.httpPort}`,
  };
  http = await startHttpServer({ host: config.httpHost, port: config.httpPort, router: apiRouter(), dialect: config.dialect, logger, ctx });
  const server = http;
  ctx.serverAddress = `${config.httpHost}:${server.port}`; // the real port when --http-port 0 picked one
  logger.info({ dataDir, dialect: config.dialect, index: runtime.state.index }, `roster listening http=${server.url}`);

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    server.close();
    runtime.stop().then(
      () => { logger.info('stopped'); logger.flush(); process.exit(0); },
      (err: unknown) => { logger.error({ err }, 'shutdown failed'); logger.flush(); process.exit(1); },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

function main(): void {
  let config;
  try {
    config = loadConfig(process.argv.slice(2), process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`roster: ${err.message}\n${usage}\n`);
      process.exit(2);
    }
    throw err;
  }
  if (config === 'help') {
    process.stdout.write(`${usage}\n`);
    return;
  }
  run(config).catch((err: unknown) => {
    process.stderr.write(`roster: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}

main();
