import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The dashboard: ui/ is the Vite root, the agent serves the build from dist/ui at /ui/ (see
// src/http/routes/ui.ts). `npm run build:ui` runs this; `npm ci` (prepare) and the test setup do too.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/ui/',
  publicDir: false,
  build: {
    outDir: fileURLToPath(new URL('../dist/ui', import.meta.url)),
    emptyOutDir: true,
    // The agent's CSP allows no inline script or style, so nothing is inlined as a data: URL either.
    assetsInlineLimit: 0,
    // The agent serves this build to anyone (the dashboard's files are public): no source maps in it, so
    // neither the maps nor a sourceMappingURL comment naming them ship. `npx vite build --config
    // ui/vite.config.ts --sourcemap` makes a build with them, to debug with.
    sourcemap: false,
  },
  logLevel: 'warn',
});
