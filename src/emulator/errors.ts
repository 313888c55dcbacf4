import { entryByName, fillMessage } from './catalogue.ts';
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

export type MessageValues = Readonly<Record<string, string | number>>;

/**
 * The public API's refusal by its descriptive name (src/emulator/errors.json): its status, its
 * message in the reference's words with `values` filled in, and `detail` (what the emulator can
 * add: the field, the ids involved) after it in parentheses.
 */
export function refuse(
  name: string,
  values: MessageValues = {},
  detail?: string,
  headers: Record<string, string> = {},
): EmulatorError {
  const entry = entryByName(name);
  if (!entry) throw new Error(`emulator: ${name} is not in the error catalogue`);
  const msg = fillMessage(entry.message, values);
  return new EmulatorError(entry.status, name, detail ? `${msg} (${detail})` : msg, headers);
}

export const badRequest = (code: string, msg: string) => new EmulatorError(400, code, msg);

/** The public API's "not found" per kind of resource, where the reference has one. */
const NOT_FOUND: Record<string, string> = {
  'IP policy': 'ERR_IP_POLICY_NOT_FOUND',
  'IP policy rule': 'ERR_IP_POLICY_RULE_NOT_FOUND',
  'tunnel group backend': 'ERR_BACKEND_MISSING',
  'weighted backend': 'ERR_BACKEND_MISSING',
  'HTTPS edge': 'ERR_EDGE_NOT_FOUND',
  'TCP edge': 'ERR_EDGE_NOT_FOUND',
  'TLS edge': 'ERR_EDGE_NOT_FOUND',
  'HTTPS edge route': 'ERR_ROUTE_NOT_FOUND',
};
/** A missing resource (not an unknown path: that is ERR_NO_SUCH_PATH). */
export const notFound = (what: string, id: string) => {
  const name = NOT_FOUND[what];
  return name
    ? refuse(name, { ID: id }, `${what} ${id}`)
    : new EmulatorError(404, 'ERR_NOT_FOUND', `${what} ${id} not found`);
};
