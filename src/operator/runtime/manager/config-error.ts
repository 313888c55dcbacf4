/** A setting that cannot work: one line naming the flag and the rule; the CLI exits 2. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
