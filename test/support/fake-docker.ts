// A fake Docker Engine API server (create exec, start, inspect) for tests of container exec checks; listen on a unix socket or TCP.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';

/** One request the fake engine received. */
export interface EngineCall {
  method: string;
  path: string;
  body: unknown;
}

/**
 * A fake Docker Engine: containers "missing" (404) and "paused" (409); any other id runs the exec's
 * Cmd on this machine and reports its real output and exit code. Every request is appended to `calls`;
 * the running exec processes are kept in `children` (kill them when the test ends).
 */
export function fakeDockerEngine(calls: EngineCall[], children: Set<ChildProcess>): http.Server {
  const execs = new Map<string, { cmd: string[]; exitCode: number | null }>();
  return http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString();
      const body: unknown = text === '' ? undefined : JSON.parse(text);
      const path = req.url ?? '';
      calls.push({ method: req.method ?? '', path, body });
      const json = (status: number, value: unknown) => res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(value));
      const create = /^\/containers\/([^/]+)\/exec$/.exec(path);
      if (req.method === 'POST' && create) {
        const id = decodeURIComponent(create[1]!);
        if (id === 'missing') return json(404, { message: `No such container: ${id}` });
        if (id === 'paused') return json(409, { message: `Container ${id} is paused, unpause the container before exec` });
        const execId = `exec${execs.size + 1}`;
        execs.set(execId, { cmd: (body as { Cmd: string[] }).Cmd, exitCode: null });
        return json(201, { Id: execId });
      }
      const start = /^\/exec\/([^/]+)\/start$/.exec(path);
      if (req.method === 'POST' && start) {
        const exec = execs.get(start[1]!);
        if (!exec) return json(404, { message: 'No such exec instance' });
        const [file, ...args] = exec.cmd;
        const child = spawn(file!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        children.add(child);
        res.writeHead(200, { 'Content-Type': 'application/vnd.docker.raw-stream' });
        child.stdout.on('data', (c: Buffer) => res.write(c));
        child.stderr.on('data', (c: Buffer) => res.write(c));
        child.on('close', (code) => {
          children.delete(child);
          exec.exitCode = code;
          res.end();
        });
        return;
      }
      const inspect = /^\/exec\/([^/]+)\/json$/.exec(path);
      if (req.method === 'GET' && inspect) {
        const exec = execs.get(inspect[1]!);
        if (!exec) return json(404, { message: 'No such exec instance' });
        return json(200, { ExitCode: exec.exitCode, Running: false });
      }
      json(404, { message: 'page not found' });
    });
  });
}
