/** What `gateway check` reports for a configuration fixture, as one string per problem. */
import path from "node:path";
import { expect } from "vitest";
import { ConfigError, loadConfig } from "../../gateway/config/load.js";
import { FIXTURES } from "./gateway.js";
import { checkFiles } from "../../gateway/server/config-files.js";

/** Path of `test/fixtures/config/<name>`. */
export const configFixture = (name: string): string => path.join(FIXTURES, "config", name);

/**
 * Every problem `gateway check` reports for a fixture (files the configuration names included):
 * `<key path>: <message> @<line>:<col>`.
 * @throws Error when the fixture is accepted
 */
export function problemsOf(name: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    loadConfig(configFixture(name), env, { checkFiles });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems.map(
      (p) => `${p.path}: ${p.message}${p.line ? ` @${p.line}:${p.col}` : ""}`,
    );
  }
  throw new Error(`${name} was accepted`);
}
