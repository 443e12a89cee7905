/**
 * The ceiling for the reads comparison: the least a uWebSockets.js server can do per request, answering
 * every GET with `{"hello":"world"}` as application/json. It loads uWebSockets.js the way src/http/uws.ts
 * does (the same package, the same native build), so the two rates in `npm run bench:compare` differ only
 * by what Roster does per read. Run as its own process: `node --import tsx bench/hello-uws.ts`; it prints
 * `hello-uws listening http://127.0.0.1:<port>` and stops on SIGTERM or SIGINT.
 */
import { createRequire } from 'node:module';
import type * as Uws from 'uWebSockets.js';

const require = createRequire(import.meta.url);
const uws = require('uWebSockets.js') as typeof Uws;
const body = '{"hello":"world"}';

const app = uws.App().get('/*', (res) => {
  // cork: the status, header and body leave in one write, as Roster writes its answers.
  res.cork(() => {
    res.writeHeader('content-type', 'application/json').end(body);
  });
});

app.listen('127.0.0.1', 0, (socket) => {
  if (socket === false) {
    process.stderr.write('hello-uws: cannot listen on 127.0.0.1\n');
    process.exit(1);
  }
  const port = uws.us_socket_local_port(socket as unknown as Uws.us_socket);
  process.stdout.write(`hello-uws listening http://127.0.0.1:${port}\n`);
  const stop = () => {
    uws.us_listen_socket_close(socket);
    app.close();
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
});
