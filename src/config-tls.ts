/**
 * The HTTPS certificate and key (`--tls-cert`, `--tls-key`; `cert_file`, `key_file` in the config file).
 * Both files are read and checked when the settings are read — a PEM certificate, a PEM private key
 * without a passphrase, the key the certificate's — so that a wrong file is named at start and refused by
 * a reload, instead of failing inside the HTTP library. The digest of their contents tells a reload that
 * rewrote the files in place from one that left them alone.
 */
import { createHash, createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { ConfigError } from './config-error.ts';

export interface TlsFiles {
  certFile: string;
  keyFile: string;
  /** SHA-256 of the certificate file's bytes, then the key file's. */
  digest: string;
  /** When the certificate (the first in the file) expires, ms since the epoch. */
  notAfterMs: number;
}

export function tlsFiles(cert: string | undefined, key: string | undefined): TlsFiles | undefined {
  if (cert === undefined && key === undefined) return undefined;
  if (cert === undefined || key === undefined) throw new ConfigError('--tls-cert and --tls-key go together: give both or neither');
  const certBytes = readTlsFile('tls-cert', cert);
  const keyBytes = readTlsFile('tls-key', key);
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(certBytes);
  } catch {
    throw new ConfigError(`--tls-cert: ${cert} holds no PEM certificate`);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(keyBytes);
  } catch (err) {
    const encrypted = /passphrase/i.test((err as Error).message);
    throw new ConfigError(`--tls-key: ${key} holds no ${encrypted ? 'unencrypted ' : ''}PEM private key${encrypted ? ' (a key with a passphrase is not supported)' : ''}`);
  }
  if (!certificate.checkPrivateKey(privateKey)) {
    throw new ConfigError(`--tls-key: the key in ${key} does not belong to the certificate in ${cert}`);
  }
  const digest = createHash('sha256').update(certBytes).update(keyBytes).digest('hex');
  return { certFile: cert, keyFile: key, digest, notAfterMs: Date.parse(certificate.validTo) };
}

/** PEM files of a certificate chain and its key are a few kilobytes; past this the file is not one. */
const tlsFileBytesMax = 1 << 20;

function readTlsFile(flag: string, file: string): Buffer {
  try {
    // A FIFO or a device would block the read, or never end it.
    const stat = statSync(file);
    if (!stat.isFile()) throw new ConfigError(`--${flag}: ${file} is not a regular file`);
    if (stat.size > tlsFileBytesMax) throw new ConfigError(`--${flag}: ${file} is larger than 1 MiB, not a PEM file`);
    return readFileSync(file);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'does not exist' : code === 'EACCES' ? 'cannot be read (permission denied)' : `cannot be read (${code ?? (err as Error).message})`;
    throw new ConfigError(`--${flag}: ${file} ${why}`);
  }
}
