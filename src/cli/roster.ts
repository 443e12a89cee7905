/**
 * The `roster` command: `roster agent` runs the agent; every other subcommand is a client of a
 * running agent's HTTP API (found through `--http-addr`, ROSTER_HTTP_ADDR or CONSUL_HTTP_ADDR). Parsed with commander;
 * Consul-style single-dash long flags are rewritten first (args.ts). Exit codes: 0 done, 1 the
 * operation failed (the agent's message on stderr), 2 a usage error; `roster lock` exits with its
 * command's code.
 *
 * Start-up is kept short: the command definitions are built eagerly (commander only), but each command's
 * code is imported when that command runs, so `roster --help` loads no client code, a client command no
 * agent code (the agent's configuration, jose) and `roster agent` none of the client's.
 */
import { Command, CommanderError, Option } from 'commander';
import { normaliseFlags, type FlagSpec } from './args.ts';
import type { ClientFlags, CliContext } from './context.ts';
import { defaultHttpAddr } from './defaults.ts';
import { CliError, exitCodes } from './errors.ts';
import { rosterVersion } from '../version.ts';


/** What an action resolves with: the exit code (most commands: 0 unless they threw). */
type Action = Promise<number | void>;

/** The options every client command takes (`--json` where there is output to give as JSON). */
function clientCommand(parent: Command, name: string, description: string, json = true): Command {
  const cmd = parent.command(name).description(description)
    .addOption(new Option('--http-addr <addr>', `the agent's HTTP address (host:port or a URL; a,b,c: the next when one cannot be connected to) [ROSTER_HTTP_ADDR, CONSUL_HTTP_ADDR, default ${defaultHttpAddr}]`))
    .addOption(new Option('--token <token>', 'bearer token sent as Authorization: Bearer [ROSTER_HTTP_TOKEN, CONSUL_HTTP_TOKEN_FILE, CONSUL_HTTP_TOKEN]'));
  return json ? cmd.option('--json', 'print JSON for scripts instead of text') : cmd;
}

/** Runs an action after parsing (see roster()). */
type Run = (action: () => Action) => void;

/** The context of a client command: its flags and the environment. */
async function ctxOf(cmd: Command): Promise<CliContext> {
  const { makeContext } = await import('./context.ts');
  return makeContext(cmd.opts<ClientFlags>(), process.env);
}

function buildProgram(run: Run): Command {
  const program = new Command('roster')
    .description('Sessions, distributed locks and health checks: the agent and its command-line client')
    .version(rosterVersion, '-v, --version')
    .enablePositionalOptions()
    .showHelpAfterError('(add --help for usage)');

  program.command('agent')
    .description('run the agent (the same flags as npm start; --dev for a throwaway development agent)')
    .helpOption(false).allowUnknownOption().allowExcessArguments()
    .argument('[flags...]', 'agent flags (roster agent --help lists them)');

  addLock(program, run);
  addKv(program, run);
  addSession(program, run);
  addRegistry(program, run);
  addToken(program, run);
  addValidate(program, run);
  addMaintenance(program, run);
  addOperator(program, run);
  addSnapshot(program, run);
  addAgentOps(program, run);
  return program;
}

/** `roster maint`, `roster catalog services|nodes` and `roster session renew`. */
function addMaintenance(program: Command, run: Run): void {
  const maint = clientCommand(program, 'maint', 'put the node or a service in or out of maintenance mode, or list it (like consul maint)')
    .option('--enable', 'enter maintenance mode').option('--disable', 'leave maintenance mode')
    .option('--reason <text>', 'with --enable: why (shown in the check\'s Notes)')
    .option('--service <id>', 'a service of the agent instead of its node')
    .action(() => run(async () => (await import('./maint.ts')).maint(await ctxOf(maint), maint.opts())));
  const catalog = program.command('catalog').description('list the catalog\'s services and nodes');
  const services = clientCommand(catalog, 'services', 'list services with their tags')
    .action(() => run(async () => (await import('./catalog.ts')).catalogServices(await ctxOf(services))));
  const nodes = clientCommand(catalog, 'nodes', 'list nodes with their addresses')
    .action(() => run(async () => (await import('./catalog.ts')).catalogNodes(await ctxOf(nodes))));
  const session = program.commands.find((c) => c.name() === 'session')!;
  const renew = clientCommand(session, 'renew', 'renew a session\'s TTL and print the session')
    .argument('<id>', 'the session id')
    .action((id: string) => run(async () => (await import('./session-renew.ts')).sessionRenew(await ctxOf(renew), id)));
}

/** `roster reload`, `roster leave`, `roster force-leave <node> [--prune]` (src/cli/agent-ops.ts), `roster info`, `roster monitor` (src/cli/monitor.ts), `roster debug` (src/cli/debug.ts). */
function addAgentOps(program: Command, run: Run): void {
  const ops = () => import('./agent-ops.ts');
  const reload = clientCommand(program, 'reload', 'have the agent read its config file again (like consul reload)')
    .action(() => run(async () => (await ops()).reload(await ctxOf(reload))));
  const leave = clientCommand(program, 'leave', 'have the agent leave the cluster gracefully and stop (like consul leave)')
    .action(() => run(async () => (await ops()).leave(await ctxOf(leave))));
  const forceLeave = clientCommand(program, 'force-leave', 'move a failed member to left at once (like consul force-leave)')
    .argument('<node>', 'the member\'s node name').option('--prune', 'forget the member altogether')
    .action((node: string) => run(async () => (await ops()).forceLeave(await ctxOf(forceLeave), node, forceLeave.opts())));
  const info = clientCommand(program, 'info', 'print the agent\'s figures: who it is, its log\'s indexes and role, its runtime (like consul info)')
    .action(() => run(async () => (await import('./info.ts')).info(await ctxOf(info))));
  const monitor = clientCommand(program, 'monitor', 'print the agent\'s log as it is written, at any level, until interrupted (like consul monitor)', false)
    .option('--log-level <level>', 'trace, debug, info, warn or error', 'info')
    .option('--log-json', 'the agent\'s JSON lines instead of text')
    .action(() => run(async () => (await import('./monitor.ts')).monitorCommand(await ctxOf(monitor), monitor.opts())));
  const debug = clientCommand(program, 'debug', 'capture the agent\'s state, metrics, log and profiles over a while into an archive for a report (like consul debug)', false)
    .option('--duration <duration>', 'how long to capture, 1s to 5m', '30s')
    .option('--interval <duration>', 'time between metrics captures', '10s')
    .option('--log-level <level>', 'level of the captured log: trace, debug, info, warn or error', 'debug')
    .option('--output <path>', 'the directory to write (default roster-debug-<time> here); the archive is <path>.tar.gz')
    .option('--no-archive', 'leave the directory, do not make the .tar.gz')
    .action(() => run(async () => (await import('./debug.ts')).debugCommand(await ctxOf(debug), debug.opts())));
}

/** `roster lock <prefix> -- <command>`. */
function addLock(program: Command, run: Run): void {
  const lock = clientCommand(program, 'lock', 'hold a lock while a command runs (like consul lock)', false)
    .argument('<prefix>', 'the lock is the key <prefix>/.lock (with -n above 1: the semaphore\'s keys under <prefix>/)')
    .argument('<command...>', 'the command and its arguments (after --); a single argument runs through sh -c')
    .option('--timeout <duration>', 'give up waiting for the lock after this long, exit 1 (default 0: wait for ever)')
    .option('--try <duration>', 'the same as --timeout (consul lock\'s older name)')
    .option('-n, --limit <n>', 'holders at once: above 1, a semaphore at <prefix> in Consul\'s layout', '1')
    .option('--child-exit-code', 'exit with the command\'s code (the default; -child-exit-code=false: exit 0 once it ran)')
    .addOption(new Option('--no-child-exit-code').hideHelp())
    .option('--monitor-retry <n>', 'failed reads in a row tolerated while watching the held lock, 1s apart', '3')
    .option('--verbose', 'say each step on stderr')
    .option('--ttl <duration>', 'session TTL; the session is renewed every TTL/2', '15s')
    .option('--name <name>', 'session name (default: roster lock <key>)')
    .passThroughOptions()
    .action((prefix: string, command: string[]) => run(async () => {
      const o = lock.opts<import('./lock.ts').LockOptions>();
      const ctx = await ctxOf(lock);
      const { lockCommand } = await import('./lock.ts');
      // passThroughOptions keeps the `--` that separates the command; it is not part of it.
      return lockCommand(ctx, prefix, command[0] === '--' ? command.slice(1) : command, o);
    }));
}

/** The KV commands' module, loaded when one of them runs. */
const kvModule = () => import('./kv.ts');

/** `roster kv get|put|delete|export|import`. */
function addKv(program: Command, run: Run): void {
  const kv = program.command('kv').description('read and write keys (get, put, delete, export, import)');
  const get = clientCommand(kv, 'get', 'print the value of a key (or the keys and values under a prefix)')
    .argument('[key]', 'the key, or the prefix with --recurse / --keys', '')
    .option('--recurse', 'every key under the prefix, as key:value lines')
    .option('--keys', 'list the keys under the prefix (up to the separator)')
    .option('--separator <sep>', 'with --keys: list only up to this separator', '/')
    .option('--detailed', 'print every field of the entry')
    .option('--base64', 'print values base64-encoded')
    .action((key: string) => run(async () => (await kvModule()).kvGet(await ctxOf(get), key, get.opts())));
  const put = clientCommand(kv, 'put', 'write a key (value: text, - for stdin, @file for a file)')
    .argument('<key>', 'the key')
    .argument('[value]', 'the value (default empty)')
    .option('--cas <index>', 'write only if the key\'s modify index is this (0: only if absent); also -cas -modify-index=N')
    .option('--acquire', 'take the lock on the key for --session')
    .option('--release', 'give back the lock on the key held by --session')
    .option('--session <id>', 'the session for --acquire / --release')
    .option('--flags <n>', 'unsigned 64-bit flags stored with the value')
    .option('--base64', 'the value is base64: decode it before storing')
    .action((key: string, value: string | undefined) => run(async () => (await kvModule()).kvPut(await ctxOf(put), key, value, put.opts())));
  const del = clientCommand(kv, 'delete', 'delete a key (or every key under a prefix)')
    .argument('[key]', 'the key, or the prefix with --recurse', '')
    .option('--recurse', 'delete every key under the prefix')
    .option('--cas <index>', 'delete only if the key\'s modify index is this; also -cas -modify-index=N')
    .action((key: string) => run(async () => (await kvModule()).kvDelete(await ctxOf(del), key, del.opts())));
  const transfer = () => import('./kv-transfer.ts');
  const exp = clientCommand(kv, 'export', 'print the keys under a prefix as consul kv export does (JSON: key, flags, base64 value)', false)
    .argument('[prefix]', 'the prefix (default: every key)', '')
    .action((prefix: string) => run(async () => (await transfer()).kvExport(await ctxOf(exp), prefix)));
  const imp = clientCommand(kv, 'import', 'write the keys of a consul kv export document')
    .argument('[data]', 'a file (or @file), - for stdin (the default), or the JSON itself')
    .option('--prefix <prefix>', 'prepend this prefix to every key')
    .action((data: string | undefined) => run(async () => (await transfer()).kvImport(await ctxOf(imp), data, imp.opts())));
}

/** The session, members and checks commands' module, loaded when one of them runs. */
const registryModule = () => import('./registry.ts');

/** `roster session list|info|create|destroy`. */
function addSession(program: Command, run: Run): void {
  const session = program.command('session').description('list, inspect, create and destroy sessions');
  const list = clientCommand(session, 'list', 'list sessions')
    .option('--node <name>', 'only the sessions of this node')
    .action(() => run(async () => (await registryModule()).sessionList(await ctxOf(list), list.opts())));
  const info = clientCommand(session, 'info', 'show one session')
    .argument('<id>', 'the session id')
    .action((id: string) => run(async () => (await registryModule()).sessionInfo(await ctxOf(info), id)));
  const create = clientCommand(session, 'create', 'create a session and print its id')
    .option('--name <name>', 'session name')
    .option('--ttl <duration>', 'TTL such as 30s (none: no TTL)')
    .option('--behavior <b>', 'release or delete the locks when the session is invalidated', undefined)
    .option('--lock-delay <duration>', 'lock-delay such as 15s')
    .option('--node <name>', 'the node the session belongs to (default: the agent\'s)')
    .action(() => run(async () => (await registryModule()).sessionCreate(await ctxOf(create), create.opts())));
  const destroy = clientCommand(session, 'destroy', 'destroy a session (its locks are released)')
    .argument('<id>', 'the session id')
    .action((id: string) => run(async () => (await registryModule()).sessionDestroy(await ctxOf(destroy), id)));
}

/** `roster members`, `roster checks` and `roster watch`. */
function addRegistry(program: Command, run: Run): void {
  const mem = clientCommand(program, 'members', 'list the cluster\'s members')
    .action(() => run(async () => (await registryModule()).members(await ctxOf(mem))));
  const chk = clientCommand(program, 'checks', 'list health checks')
    .option('--state <state>', 'any, passing, warning or critical (default any)')
    .option('--node <name>', 'only this node\'s checks')
    .option('--service <name>', 'only this service\'s checks')
    .action(() => run(async () => (await registryModule()).checks(await ctxOf(chk), chk.opts())));
  const watch = clientCommand(program, 'watch', 'print a live stream of changes until interrupted, or run a command for each (-- cmd args)')
    .usage('[options] <topic> [key] [-- <handler> [args...]]')
    .argument('<topic>', 'service_health, service_checks, node_checks, checks_in_state, serving_status, kv_prefix or sessions')
    .argument('[key]', 'service, node, state, key prefix or node name (per topic)', '')
    .option('--index <n>', 'resume from this index instead of starting with a snapshot')
    .option('--passing-only', 'service_health: only instances whose checks pass')
    .action((topic: string, key: string) => run(async () => {
      const ctx = await ctxOf(watch);
      const { watchCommand } = await import('./watch.ts');
      return watchCommand(ctx, topic, key, { ...watch.opts(), ...(watchHandler !== undefined ? { handler: watchHandler } : {}) });
    }));
}

/** `roster operator log`. */
function addOperator(program: Command, run: Run): void {
  const log = clientCommand(program.command('operator').description('inspect the cluster\'s log'), 'log',
    'show the log: leader, indexes, compaction point, copies and every node\'s lag')
    .action(() => run(async () => (await import('./operator.ts')).operatorLog(await ctxOf(log))));
}

/** `roster token`: mints a token locally, without an agent. */
/** `roster validate <file>` (src/cli/validate.ts): not a client of an agent. */
function addValidate(program: Command, run: Run): void {
  program.command('validate').description('check a config file as the agent would read it, without starting anything (like consul validate)')
    .argument('<file>', 'the config file')
    .action((file: string) => run(async () => (await import('./validate.ts')).validateCommand(file, (await import('./stdout.ts')).writeOut)));
}

function addToken(program: Command, run: Run): void {
  const token = program.command('token').description('mint a bearer token with the agent\'s JWT secret (when auth is on)')
    .requiredOption('--subject <name>', 'who the token is for')
    .option('--rules <json>', 'ACL rules: [{"resource":"key","prefix":"app/","access":"write"}]', '[]')
    .option('--ttl <duration>', 'how long the token is valid', '1h')
    .option('--config-file <path>', 'the agent\'s config file holding auth.jwt_secret (else ROSTER_AUTH_SECRET)')
    .action(() => run(async () => {
      const o = token.opts<{ subject: string; rules: string; ttl: string; configFile?: string }>();
      const { mintToken, TokenRequestError } = await import('./token.ts');
      try {
        (await import('./stdout.ts')).writeOut(`${await mintToken(o, process.env)}\n`);
      } catch (err) {
        if (err instanceof TokenRequestError) throw new CliError(err.message, exitCodes.usage);
        throw err;
      }
    }));
}

/** The snapshot commands' module, loaded when one of them runs. */
const snapshotModule = () => import('./snapshot.ts');

/** `roster snapshot save|restore|inspect`. */
function addSnapshot(program: Command, run: Run): void {
  const snapshot = program.command('snapshot').description('back up and restore the whole state (save, restore, inspect)');
  const save = clientCommand(snapshot, 'save', 'write a snapshot of the agent\'s state to a file')
    .argument('<file>', 'the file to write (replaced atomically)')
    .option('--stale', 'answer from the agent\'s state as it is, without a barrier')
    .action((file: string) => run(async () => (await snapshotModule()).snapshotSave(await ctxOf(save), file, save.opts())));
  const restore = clientCommand(snapshot, 'restore', 'replace the whole state by a snapshot file\'s')
    .argument('<file>', 'a file written by roster snapshot save')
    .action((file: string) => run(async () => (await snapshotModule()).snapshotRestore(await ctxOf(restore), file)));
  const inspect = snapshot.command('inspect').description('show what a snapshot file holds, offline (exit 1 when its checksum is bad)')
    .argument('<file>', 'the snapshot file')
    .option('--json', 'print JSON for scripts instead of text')
    .action((file: string) => run(async () => (await snapshotModule()).snapshotInspect(file, inspect.opts())));
}

/** Every command's long flags, to rewrite `-flag` as `--flag` for the command a line names. */
function flagSpecOf(cmd: Command): FlagSpec {
  const names = new Set<string>(['help']);
  const takesValue = new Set<string>();
  const shortTakesValue = new Set<string>();
  for (const opt of cmd.options) {
    if (opt.short !== undefined && (opt.required || opt.optional)) shortTakesValue.add(opt.short.slice(1));
    const name = opt.long?.replace(/^--/, '');
    if (name === undefined) continue;
    names.add(name);
    if (opt.required || opt.optional) takesValue.add(name);
  }
  return { names, takesValue, shortTakesValue, ...(cmd.name() === 'lock' ? { operandsBeforeChild: 1 } : {}) };
}

/** Finds the (sub)command the line names and rewrites the arguments that follow it. */
function normalise(program: Command, argv: string[]): string[] {
  let cmd = program;
  let i = 0;
  while (i < argv.length) {
    const next = cmd.commands.find((c) => c.name() === argv[i]);
    if (next === undefined) break;
    cmd = next;
    i += 1;
  }
  if (cmd === program) return argv;
  return [...argv.slice(0, i), ...normaliseFlags(argv.slice(i), flagSpecOf(cmd))];
}

async function fail(err: unknown): Promise<number> {
  if (err instanceof CliError) {
    const { colorsFor, shown } = await import('./output.ts');
    const c = colorsFor(process.stderr, process.env);
    process.stderr.write(`${c.red('roster:')} ${shown(err.message, true)}\n`);
    return err.exitCode;
  }
  throw err;
}

/** `roster watch … -- <handler> [args…]`: the handler, cut from the line before parsing (commander would read its words as operands). */
let watchHandler: string[] | undefined;

export async function roster(argv: string[]): Promise<number> {
  const cut = argv[0] === 'watch' ? argv.indexOf('--') : -1;
  if (cut >= 0) {
    watchHandler = argv.slice(cut + 1);
    argv = argv.slice(0, cut);
  }
  if (argv[0] === 'agent') {
    const { agentCommand } = await import('./agent.ts');
    await agentCommand(argv.slice(1), process.env);
    return -1; // the agent runs until it is stopped, and exits by itself
  }
  let pending: Action | undefined;
  // Run after parsing, as a promise, so an error thrown while setting up (a bad address) is a CliError like any other.
  const program = buildProgram((action) => { pending = Promise.resolve().then(action); });
  for (const cmd of [program, ...allCommands(program)]) {
    cmd.exitOverride().configureOutput({ outputError: (text, write) => write(misplaced(cmd === program, text.replace(/^error: /, 'roster: '))) });
  }
  try {
    await program.parseAsync(normalise(program, argv), { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help asked for, or the version: 0. Help shown because the line was incomplete, or any parse error: 2.
      return err.exitCode === 0 ? exitCodes.ok : exitCodes.usage;
    }
    throw err;
  }
  if (pending === undefined) return exitCodes.ok;
  let code: number;
  try {
    code = (await pending) ?? exitCodes.ok;
  } catch (err) {
    return await fail(err);
  }
  return outputChecked(code);
}

/** The command's exit code once its output is written: 1 when stdout could not take it (stdout.ts). */
async function outputChecked(code: number): Promise<number> {
  const { outputFailure, readerGone, failureReason } = await import('./stdout.ts');
  const failure = await outputFailure();
  if (failure === undefined || readerGone(failure)) return code;
  return fail(new CliError(`cannot write output: ${failureReason(failure)}`));
}

/**
 * A client option given before the command (`roster --token t kv get k`) is unknown there, as in Consul's
 * CLI: the error says where it goes.
 */
function misplaced(root: boolean, text: string): string {
  const option = /^roster: unknown option '(--(?:token|http-addr|json))(?:=[^']*)?'/.exec(text)?.[1];
  if (!root || option === undefined) return text;
  return `${text.trimEnd()}: ${option} is an option of each command, given after it (roster kv get ${option} … <key>)\n`;
}

function allCommands(cmd: Command): Command[] {
  return cmd.commands.flatMap((c) => [c, ...allCommands(c)]);
}

const code = await roster(process.argv.slice(2));
if (code >= 0) process.exit(code);
