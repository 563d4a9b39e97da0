/** Location of the demo configuration (memory store, static demo token), used by `npm run demo` only. */
import { fileURLToPath } from "node:url";

/**
 * Absolute path of `config/demo.yaml` in the installed package (from `dist/gateway/demo/` or `gateway/demo/`).
 * `gateway start` never falls back to it (its well-known token would be an open door).
 */
export const DEMO_CONFIG = fileURLToPath(
  new URL(
    import.meta.url.includes("/dist/") ? "../../../config/demo.yaml" : "../../config/demo.yaml",
    import.meta.url,
  ),
);
