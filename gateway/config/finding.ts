/** A problem found by a check that runs on the validated configuration (files it names). */
export interface ConfigFinding {
  /** Where it points in the document: keys (dots allowed) and array indexes. */
  segments: readonly (string | number)[];
  message: string;
}

/**
 * A file the configuration names cannot be used (unreadable, or its content refused): the message
 * is `<key path>: <detail>`, and the key path is kept as segments, so `gateway check` places it
 * even when a key contains dots (an upstream named `docs.v2`).
 */
export class ConfigFileError extends Error {
  readonly segments: readonly (string | number)[];
  readonly detail: string;

  constructor(segments: readonly (string | number)[], detail: string, options?: { cause?: unknown }) {
    super(`${segments.join(".")}: ${detail}`, options);
    this.name = "ConfigFileError";
    this.segments = segments;
    this.detail = detail;
  }
}
