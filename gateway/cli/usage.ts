/** The `gateway` command's usage text (SPEC §9), printed by `gateway help` and after a usage error. */
export const USAGE = `usage: gateway <command> [options]

  start --config FILE   run the gateway; FILE may come from $GATEWAY_CONFIG instead (one is required)
  check --config FILE   validate FILE and the files it names in one pass; print its routes, classes
                        and plans; exit 1 listing every problem
        --strict        also fail on an unset \${ENV} reference (a warning otherwise)
        --connect       also try what FILE names: Redis, the identity provider, each upstream, each
                        TLS file; one line per attempt
  version, --version    print the version
  help, --help          print this text

The demo (bundled config/demo.yaml, its well-known token) runs with \`npm run demo\`, never by default.`;
