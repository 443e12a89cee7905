/** Loopback targets the probe tests start: listen on an ephemeral port, close with every socket. */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import type { Server } from 'node:net';

const fixtures = new URL('./fixtures/', import.meta.url);
/** A self-signed certificate for localhost, 127.0.0.1 and ::1 (made once with openssl, valid to 2126). */
export const tls = {
  cert: readFileSync(new URL('localhost-cert.pem', fixtures)),
  key: readFileSync(new URL('localhost-key.pem', fixtures)),
};

/** Listens on 127.0.0.1 and an ephemeral port; returns the port and a close that also drops open sockets. */
export async function listen(server: Server, host = '127.0.0.1'): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('secureConnection', (socket: net.Socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as net.AddressInfo).port;
  const close = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  return { port, close };
}

/** A port nothing listens on: bound, then released. */
export async function closedPort(): Promise<number> {
  const { port, close } = await listen(net.createServer());
  await close();
  return port;
}
