import { publicErrorCode } from './error-codes.ts';
import { newId } from './ids.ts';

/** The API's one error body shape. */
export class EmulatorError extends Error {
  readonly status: number;
  readonly code: string;
  readonly headers: Record<string, string>;
  constructor(status: number, code: string, msg: string, headers: Record<string, string> = {}) {
    super(msg);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
  body() {
    return errorBody(this.status, this.code, this.message);
  }
}

export const errorBody = (status: number, code: string, msg: string) => ({
  error_code: publicErrorCode(code),
  status_code: status,
  msg,
  details: { operation_id: newId('op'), code },
});

export const badRequest = (code: string, msg: string) => new EmulatorError(400, code, msg);
const NOT_FOUND_CODES: Record<string, string> = {
  'IP policy': 'ERR_IP_POLICY_NOT_FOUND',
  'IP policy rule': 'ERR_IP_POLICY_RULE_NOT_FOUND',
};
/** A missing resource (not an unknown path: that is ERR_NO_SUCH_PATH). */
export const notFound = (what: string, id: string) =>
  new EmulatorError(404, NOT_FOUND_CODES[what] ?? 'ERR_NOT_FOUND', `${what} ${id} not found`);
