/** `reload` (SPEC §20): configuration that follows its file. */
import { z } from "zod";

/** `reload`: top level; without it a configuration changes only on SIGHUP. */
export const reloadSchema = z
  .strictObject({
    watch: z
      .boolean()
      .default(false)
      .describe(
        "Apply a changed configuration file, or a changed file it names, as SIGHUP does, within 5 s, without a signal.",
      ),
  })
  .prefault({});
