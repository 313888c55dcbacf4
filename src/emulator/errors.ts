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
  error_code: code,
  status_code: status,
  msg,
  details: { operation_id: newId('op') },
});

export const badRequest = (code: string, msg: string) => new EmulatorError(400, code, msg);
export const notFound = (what: string, id: string) =>
  new EmulatorError(404, 'ERR_NOT_FOUND', `${what} ${id} not found`);
