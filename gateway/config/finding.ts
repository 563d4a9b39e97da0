/** A problem found by a check that runs on the validated configuration (files it names). */
export interface ConfigFinding {
  /** Where it points in the document: keys (dots allowed) and array indexes. */
  segments: readonly (string | number)[];
  message: string;
}
