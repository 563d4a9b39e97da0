/** The package version, read once at startup (for `gateway_build_info`). */
import { readFileSync } from "node:fs";

function readVersion(): string {
  for (const rel of ["../../package.json", "../../../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), "utf8")) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === "api-gateway" && pkg.version) return pkg.version;
    } catch {
      // try the next location (source tree vs dist/)
    }
  }
  return "0.0.0";
}

/** Semantic version of this build. */
export const VERSION = readVersion();
