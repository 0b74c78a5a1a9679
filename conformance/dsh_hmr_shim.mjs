// Test-only: @deepseek-ai/dsh 0.1.0-rc.8 as published cannot boot any profile, because
// its launcher calls hmr.registerConfig(), which no published cordis-plugin-hmr
// (1.0.16 to 1.0.19) has. Providing an `hmr` service whose registerConfig watches
// nothing lets the launcher boot; only live reloading of patch files is lost.
export const name = "hmr-shim";
export function apply(ctx) {
  ctx.provide("hmr", { registerConfig: async () => async () => {} });
}
