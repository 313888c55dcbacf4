// The public API's error numbers (its error reference), by the emulator's descriptive code,
// taken from the error catalogue (src/emulator/errors.json): one source for the numbers, the
// messages and the tests. Clients test errors by `error_code` (`ERR_NGROK_<number>`): where the
// reference has a number for a case the emulator answers with it; the descriptive name always
// stays in `details.code`, and a case the reference has no number for keeps its descriptive name.
import { PUBLIC_NUMBER_BY_NAME } from './catalogue.ts';

export const PUBLIC_ERROR_NUMBERS: Readonly<Record<string, number>> = PUBLIC_NUMBER_BY_NAME;

export const publicErrorCode = (code: string): string => {
  const n = PUBLIC_ERROR_NUMBERS[code];
  return n === undefined ? code : `ERR_NGROK_${n}`;
};
