import { writeFileSync } from 'node:fs';
import { defineConfig } from 'vite';

// The build is served by the gateway (playground.go), which embeds dist/.
// Asset names carry a content hash, so the gateway caches them for a year;
// index.html is revalidated on every load.

// The committed placeholder that lets the gateway compile before the first
// build. Vite empties dist/ on every build, so the build writes it back,
// byte for byte, and the work tree stays clean.
const placeholder = 'Placeholder so that the gateway compiles before the playground is built: playground.go embeds this folder.\n';

export default defineConfig({
  // Relative URLs, so the playground also works behind a path prefix.
  base: './',
  // React's automatic JSX runtime through Vite's own esbuild: no plugin is
  // needed, since the playground has no hot reload to support.
  esbuild: { jsx: 'automatic' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // Every asset is a file under dist/assets, never an inlined data: URL.
    assetsInlineLimit: 0,
    // GraphiQL with its editor is one large chunk; that is expected here.
    chunkSizeWarningLimit: 4096,
    sourcemap: false,
    // Skip gzip-measuring every chunk: it only feeds the build's report.
    reportCompressedSize: false,
    rollupOptions: {
      onwarn(warning, warn) {
        // GraphiQL's dependencies mark modules "use client" for React server
        // components; a client-only bundle can ignore that.
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE') return;
        warn(warning);
      },
    },
  },
  plugins: [
    {
      name: 'costgw-placeholder',
      apply: 'build',
      closeBundle() {
        writeFileSync('dist/.gitkeep', placeholder);
      },
    },
  ],
});
