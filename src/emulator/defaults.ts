/** The emulator's API key when none is given (also its admin key). */
export const DEFAULT_API_KEY = 'emulator-key';
