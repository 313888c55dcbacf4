/** The emulator's API key when none is given (also its admin key). */
export const DEFAULT_API_KEY = 'emulator-key';
/** The account `--api-key` and `--keys-file` keys belong to; `--account` adds others. */
export const DEFAULT_ACCOUNT = 'default';
/** An account's name: a DNS label (lowercase letters, digits, `-`; at most 63 characters). */
export const ACCOUNT_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
