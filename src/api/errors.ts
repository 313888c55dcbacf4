// One error type for every failed API call, with the API's error body when it sent one.

export interface ApiErrorBody {
  error_code?: string;
  status_code?: number;
  msg?: string;
  details?: Record<string, unknown> & { operation_id?: string; code?: string };
}

export class ApiError extends Error {
  readonly status: number;
  readonly errorCode: string | undefined;
  readonly apiMessage: string | undefined;
  readonly details: ApiErrorBody['details'];
  readonly operation: string;
  readonly resourceId: string | undefined;
  /**
   * Set when no answer of the API's arrived: a network code (connection refused, timeout,
   * reset), `BAD_RESPONSE` (an answer that is not the API's JSON: HTML, a proxy's page, a body
   * of the wrong shape) or `API_UNAVAILABLE` (not sent: the API is known to be away).
   */
  readonly networkCode: string | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(init: {
    status: number;
    operation: string;
    resourceId?: string | undefined;
    body?: ApiErrorBody | undefined;
    text?: string | undefined;
    networkCode?: string | undefined;
    retryAfterMs?: number | undefined;
    cause?: unknown;
  }) {
    const what = init.resourceId ? `${init.operation} ${init.resourceId}` : init.operation;
    // API_UNAVAILABLE and BAD_RESPONSE carry their reason as text
    const why = init.networkCode
      ? (init.text ?? `network error ${init.networkCode}`)
      : `HTTP ${init.status}${init.body?.error_code ? ` ${init.body.error_code}` : ''}: ${init.body?.msg ?? init.text ?? ''}`.trim();
    super(`${what}: ${why}`, { cause: init.cause });
    this.name = 'ApiError';
    this.status = init.status;
    this.errorCode = init.body?.error_code;
    this.apiMessage = init.body?.msg ?? init.text;
    this.details = init.body?.details;
    this.operation = init.operation;
    this.resourceId = init.resourceId;
    this.networkCode = init.networkCode;
    this.retryAfterMs = init.retryAfterMs;
  }

  get operationId(): string | undefined {
    return this.details?.operation_id;
  }

  /** The number of `ERR_NGROK_<number>`, how the public API's clients tell errors apart. */
  get errorNumber(): number | undefined {
    const m = /^ERR_NGROK_(\d+)$/.exec(this.errorCode ?? '');
    return m ? Number(m[1]) : undefined;
  }

  /** The emulator's descriptive name of the error (`details.code`), when the server sent one. */
  get errorName(): string | undefined {
    return typeof this.details?.code === 'string' ? this.details.code : undefined;
  }
}

export const isApiError = (e: unknown): e is ApiError => e instanceof ApiError;
/** A path the server does not have (a client or version mismatch), not a missing resource. */
export const isUnknownPath = (e: unknown): boolean =>
  isApiError(e) &&
  e.status === 404 &&
  (e.errorName === 'ERR_NO_SUCH_PATH' || e.errorCode === 'ERR_NO_SUCH_PATH');
/**
 * The resource does not exist (deleted, or never was), as the API said it. An unknown path, or
 * a 404 page that is not the API's answer, is not that: it must never read as "already deleted".
 */
export const isNotFound = (e: unknown): boolean =>
  isApiError(e) && e.status === 404 && e.networkCode === undefined && !isUnknownPath(e);
export const isRateLimited = (e: unknown): boolean => isApiError(e) && e.status === 429;
/**
 * Network codes of a request that never reached the API (nothing sent, or no connection made):
 * whatever it asked for was not done.
 */
const NOT_SENT = new Set([
  'API_UNAVAILABLE',
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * No answer of the API's own came back, yet the request may have reached it: a timeout, a reset,
 * a proxy's or gateway's page (its 504 while the API works on). What it asked for may be done,
 * now or a little later.
 */
export const unanswered = (e: unknown): boolean =>
  isApiError(e) &&
  (e.networkCode !== undefined
    ? !NOT_SENT.has(e.networkCode)
    : e.errorCode === undefined && (e.status >= 500 || e.status === 408));

/** 4xx other than 408/409/429 means the request itself is wrong: retrying cannot help. */
export const isRetryable = (e: unknown): boolean =>
  isApiError(e) && (e.networkCode !== undefined || e.status >= 500 || e.status === 429 || e.status === 408);
export const isInvalidRequest = (e: unknown): boolean =>
  isApiError(e) && e.status >= 400 && e.status < 500 && !isRetryable(e) && e.status !== 404;
