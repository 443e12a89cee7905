#!/usr/bin/env node
// The `roster` command: registers tsx so the TypeScript sources run as they are, then starts the CLI.
import { register } from 'tsx/esm/api';

register();
await import(new URL('../src/cli/roster.ts', import.meta.url).href);
