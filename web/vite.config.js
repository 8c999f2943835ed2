// Builds the UI into dist/, which `cairn server` serves at /. JSX is compiled for Preact by
// esbuild; asset names carry a content hash, so the server lets browsers cache them for good.
import { defineConfig } from "vite";

export default defineConfig({
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2020",
    chunkSizeWarningLimit: 300,
  },
  server: {
    // `npm run dev` against a server on :5000.
    proxy: { "/api": "http://127.0.0.1:5000", "/version": "http://127.0.0.1:5000" },
  },
});
