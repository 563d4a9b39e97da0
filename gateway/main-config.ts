/** Location of the bundled default configuration (memory store, static demo token). */
import { fileURLToPath } from "node:url";

/** Absolute path of `config/demo.yaml` in the installed package (from `dist/gateway/` or `gateway/`). */
export const DEFAULT_CONFIG = fileURLToPath(
  new URL(
    import.meta.url.includes("/dist/") ? "../../config/demo.yaml" : "../config/demo.yaml",
    import.meta.url,
  ),
);
