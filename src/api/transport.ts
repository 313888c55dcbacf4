// HTTP transport: auth and version headers, timeouts, retries with full-jitter backoff,
// Retry-After, the request gate (request-gate.ts) and the per-call hook. It knows no resource.
import { Agent, type Dispatcher, request } from 'undici';
import { VERSION } from '../version.ts';
import { ApiError, type ApiErrorBody } from './errors.ts';
import type { Method } from './operations.ts';
import { redactCredentials } from './redact.ts';
import { Pace, type Priority, type RequestGate } from './request-gate.ts';
import { parseRetryAfter } from './retry-after.ts';

/** The longest API error message kept (characters). */
const ERROR_MSG_MAX = 1024;

export const USER_AGENT = `edge-operator/${VERSION} (node ${process.versions.node})`;
export const SERVICE_VERSION = '2';

export interface CallEvent {
  operation: string;
  method: Method;
  /** HTTP status, or 0 when no response arrived. */
  status: number;
  durationMs: number;
  attempt: number;
}

export interface TransportOptions {
  baseUrl: string;
  apiKey: string;
  /** undici dispatcher; tests pass a MockAgent. */
  dispatcher?: Dispatcher;
  timeouts?: { connectMs?: number; headersMs?: number; bodyMs?: number };
  retry?: { maxAttempts?: number; baseDelayMs?: number; maxDelayMs?: number; maxRetryAfterMs?: number };
  /** Requests per minute allowed by the account (default 120); Infinity disables. Ignored with `gate`. */
  rateLimitPerMinute?: number;
  /** What each request waits for (default: a Pace at rateLimitPerMinute); the operator passes its scheduler's budget. */
  gate?: RequestGate;
  onCall?: (event: CallEvent) => void;
  /** Called before sleeping for a retry; the operator counts throttling with it. */
  onRetry?: (event: CallEvent & { delayMs: number; reason: string }) => void;
  /**
   * The API stopped answering as the API (a hang, a timeout, a refused connection, a body that
   * is not its JSON), or answers again (undefined): once per change, for one log line.
   */
  onOutage?: (outage: { reason: string; since: number } | undefined) => void;
  userAgent?: string;
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface RequestSpec {
  operation: string;
  method: Method;
  /** Path below the base URL, or an absolute URL of the same origin (paging). */
  path: string;
  body?: unknown;
  /** A resource-creating POST: retried only when the request provably never left. */
  creates?: boolean;
  resourceId?: string;
  signal?: AbortSignal;
  /** Budget priority: 'low' for background observation, which waits behind everything else. */
  priority?: Priority;
  /** Called as the request leaves (after waiting for budget), once per attempt. */
  onSend?: () => void;
}

/** Network failures where the request provably never reached the server. */
const NEVER_SENT = new Set([
  'ECONNREFUSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
]);

/** Failures in a row (with no answer of the API's between them) that make an outage. */
const OUTAGE_AFTER = 2;
/** During an outage, a call that was not sent is tried again after this long. */
const OUTAGE_RETRY_MS = 5000;

/** A wait that ran out: the same server will most likely keep everyone waiting as long again. */
const TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);
/** The client itself was closed (a shutdown): trying again cannot help. */
const CLOSED = new Set(['UND_ERR_DESTROYED', 'UND_ERR_CLOSED']);

/**
 * Answers a proxy or load balancer in front of the API gives in its own words (a page, plain
 * text): throttled, or the API unavailable behind it. They are what they say, and tried again as
 * the API's own 429 and 5xx are; any other status without the API's JSON is not the API.
 */
const GATEWAY = new Set([429, 502, 503, 504]);

/** What a body that is not the API's JSON says, for the condition and the log; `text` redacted already. */
function notTheApi(status: number, contentType: string | string[] | undefined, text: string): string {
  const type =
    String(contentType ?? '')
      .split(';')[0]!
      .trim() || 'no content type';
  const html = /html/i.test(type) || /^\s*<(!doctype|html)/i.test(text);
  const said = html ? '' : `: ${JSON.stringify(text.trim().slice(0, 80))}`;
  const what = `${html ? 'HTML' : 'a body that is not JSON'} (HTTP ${status}, ${type}${said})`;
  return GATEWAY.has(status)
    ? `answered ${what} from in front of the API (a proxy or load balancer)`
    : `answered ${what}, not the API's JSON: is --api-url the API's base URL?`;
}

const networkCodeOf = (err: unknown): string => {
  const e = err as { code?: string; cause?: { code?: string }; name?: string };
  return e?.code ?? e?.cause?.code ?? e?.name ?? 'UNKNOWN';
};

const defaultSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });

export class Transport {
  readonly baseUrl: URL;
  private readonly apiKey: string;
  private readonly dispatcher: Dispatcher;
  private readonly connectMs: number;
  private readonly headersMs: number;
  private readonly bodyMs: number;
  private readonly maxAttempts: number;
  /** Calls begun and not yet ended (waiting for budget, sent, or between attempts). */
  private inFlight = 0;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly maxRetryAfterMs: number;
  readonly gate: RequestGate;
  private readonly opts: TransportOptions;
  /**
   * While the API hangs or does not answer as the API, one call at a time probes it and every
   * other call fails at once with the reason: each waiting object learns within seconds, and
   * no budget or time is spent on requests that would fail the same way.
   */
  private outage?: { reason: string; since: number; probing: boolean };
  private awayInARow = 0;

  constructor(opts: TransportOptions) {
    this.opts = opts;
    this.baseUrl = new URL(opts.baseUrl.endsWith('/') ? opts.baseUrl : `${opts.baseUrl}/`);
    this.apiKey = opts.apiKey;
    const t = opts.timeouts ?? {};
    this.connectMs = t.connectMs ?? 10_000;
    this.headersMs = t.headersMs ?? 30_000;
    this.bodyMs = t.bodyMs ?? 30_000;
    this.dispatcher =
      opts.dispatcher ?? new Agent({ connect: { timeout: this.connectMs }, keepAliveTimeout: 30_000 });
    const r = opts.retry ?? {};
    this.maxAttempts = r.maxAttempts ?? 5;
    this.baseDelayMs = r.baseDelayMs ?? 250;
    this.maxDelayMs = r.maxDelayMs ?? 15_000;
    this.maxRetryAfterMs = r.maxRetryAfterMs ?? 60_000;
    this.gate = opts.gate ?? new Pace(opts.rateLimitPerMinute ?? 120);
  }

  url(path: string): URL {
    if (/^https?:\/\//.test(path)) {
      const u = new URL(path);
      // Never send the API key to another origin, whatever a next_page_uri says.
      if (u.origin !== this.baseUrl.origin)
        throw new Error(`refusing to follow ${u.origin}: not the API origin`);
      return u;
    }
    return new URL(path.replace(/^\//, ''), this.baseUrl);
  }

  private backoff(attempt: number): number {
    const cap = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (attempt - 1));
    return Math.floor((this.opts.random ?? Math.random)() * cap);
  }

  async request<T = unknown>(spec: RequestSpec): Promise<{ status: number; body: T | undefined }> {
    const url = this.url(spec.path);
    const payload = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    const sleep = this.opts.sleep ?? defaultSleep;
    const probe = this.claimProbe(spec);
    this.inFlight++;
    try {
      return await this.attempts<T>(spec, url, payload, sleep);
    } finally {
      this.inFlight--;
      if (probe && this.outage) this.outage.probing = false;
    }
  }

  /** Fails at once while another call probes an API known to be away; else this call may go (and probes). */
  private claimProbe(spec: RequestSpec): boolean {
    if (!this.outage) return false;
    if (this.outage.probing)
      throw new ApiError({
        status: 0,
        operation: spec.operation,
        resourceId: spec.resourceId,
        networkCode: 'API_UNAVAILABLE',
        text: this.outage.reason,
        // looked at again shortly, not with a backoff that grows while nothing is sent
        retryAfterMs: OUTAGE_RETRY_MS,
      });
    this.outage.probing = true;
    return true;
  }

  /**
   * A failure that says the API is away (no answer in time, refused, or not the API): after
   * two in a row with no answer of the API's between them, calls wait for a probe. A dropped
   * connection or a 5xx is one request's bad luck, not an outage.
   */
  private wentAway(reason: string): void {
    if (!this.outage && ++this.awayInARow < OUTAGE_AFTER) return;
    if (this.outage?.reason === reason) return;
    const since = this.outage?.since ?? Date.now();
    this.outage = { reason, since, probing: this.outage?.probing ?? false };
    this.opts.onOutage?.({ reason, since });
  }

  private answered(): void {
    this.awayInARow = 0;
    if (!this.outage) return;
    this.outage = undefined;
    this.opts.onOutage?.(undefined);
  }

  private async attempts<T>(
    spec: RequestSpec,
    url: URL,
    payload: string | undefined,
    sleep: NonNullable<TransportOptions['sleep']>,
  ): Promise<{ status: number; body: T | undefined }> {
    for (let attempt = 1; ; attempt++) {
      await this.gate.take(spec.priority);
      spec.onSend?.();
      const started = performance.now();
      const event = (status: number): CallEvent => ({
        operation: spec.operation,
        method: spec.method,
        status,
        durationMs: performance.now() - started,
        attempt,
      });
      let res: Dispatcher.ResponseData;
      try {
        res = await request(url, {
          method: spec.method,
          dispatcher: this.dispatcher,
          headersTimeout: this.headersMs,
          bodyTimeout: this.bodyMs,
          signal: spec.signal,
          headers: {
            authorization: `Bearer ${this.apiKey}`,
            'service-version': SERVICE_VERSION,
            'user-agent': this.opts.userAgent ?? USER_AGENT,
            accept: 'application/json',
            ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: payload,
        });
      } catch (err) {
        if (spec.signal?.aborted) throw err;
        const networkCode = networkCodeOf(err);
        this.opts.onCall?.(event(0));
        const reason = TIMEOUTS.has(networkCode)
          ? `no answer within ${Math.round((networkCode === 'UND_ERR_CONNECT_TIMEOUT' ? this.connectMs : this.headersMs) / 1000)}s (${networkCode})`
          : `network error ${networkCode}`;
        if (TIMEOUTS.has(networkCode) || NEVER_SENT.has(networkCode)) this.wentAway(reason);
        // a timeout is not retried here: the caller learns now, and retries with its own backoff
        // a POST the server may have acted on (a create, an agent's restart) is not sent twice
        const mayRetry =
          (spec.method !== 'POST' || NEVER_SENT.has(networkCode)) &&
          !TIMEOUTS.has(networkCode) &&
          !CLOSED.has(networkCode);
        if (mayRetry && attempt < this.maxAttempts) {
          const delayMs = this.backoff(attempt);
          this.opts.onRetry?.({ ...event(0), delayMs, reason: networkCode });
          await sleep(delayMs, spec.signal);
          continue;
        }
        throw new ApiError({
          status: 0,
          operation: spec.operation,
          resourceId: spec.resourceId,
          networkCode,
          text: reason,
          cause: err,
        });
      }

      let text: string;
      try {
        text = await res.body.text();
      } catch (err) {
        const networkCode = networkCodeOf(err);
        this.opts.onCall?.(event(0));
        throw new ApiError({
          status: 0,
          operation: spec.operation,
          resourceId: spec.resourceId,
          networkCode,
          cause: err,
        });
      }
      this.opts.onCall?.(event(res.statusCode));
      let parsed: unknown;
      let gateway: string | undefined;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        // redacted before it is cut: a key echoed across the cut must not leave a prefix behind
        const reason = notTheApi(
          res.statusCode,
          res.headers['content-type'],
          redactCredentials(text, this.apiKey),
        );
        // HTML from a proxy or a web page, say: not the API. Never a 404 that reads as
        // "deleted", never a success.
        if (!GATEWAY.has(res.statusCode)) {
          this.wentAway(reason);
          throw new ApiError({
            status: res.statusCode,
            operation: spec.operation,
            resourceId: spec.resourceId,
            networkCode: 'BAD_RESPONSE',
            text: reason,
          });
        }
        gateway = reason;
      }
      // a gateway's own answer says nothing of whether the API is there
      if (!gateway) this.answered();
      if (res.statusCode >= 200 && res.statusCode < 300) {
        return { status: res.statusCode, body: parsed as T };
      }

      const body =
        parsed && typeof parsed === 'object' && !Array.isArray(parsed)
          ? this.redacted(parsed as ApiErrorBody)
          : undefined;
      const retryAfterMs = parseRetryAfter(res.headers['retry-after']);
      const error = new ApiError({
        status: res.statusCode,
        operation: spec.operation,
        resourceId: spec.resourceId,
        body,
        text: body ? undefined : (gateway ?? redactCredentials(text, this.apiKey).slice(0, 200)),
        retryAfterMs,
      });
      // A 429 was refused before any work was done: safe to retry even a create.
      const retryable =
        res.statusCode === 429 || (res.statusCode >= 500 && !spec.creates && spec.method !== 'POST');
      if (!retryable || attempt >= this.maxAttempts) throw error;
      let delayMs = this.backoff(attempt);
      if (res.statusCode === 429 && retryAfterMs !== undefined) {
        if (retryAfterMs > this.maxRetryAfterMs) throw error;
        delayMs = Math.max(delayMs, retryAfterMs);
      }
      this.opts.onRetry?.({ ...event(res.statusCode), delayMs, reason: `HTTP ${res.statusCode}` });
      // the budget counts as backed up meanwhile: work not begun stays queued, and the run
      // waiting here holds no worker (the scheduler's budget, RateLimiter.throttled)
      if (res.statusCode === 429) this.gate.throttled?.(delayMs);
      await sleep(delayMs, spec.signal);
    }
  }

  /**
   * An error body with no part of an API key in its message (an authentication error quotes
   * one), and a message of a bounded length: it becomes a condition and an Event of an object
   * (the API's own are a sentence or two; a proxy's may be a page).
   */
  private redacted(body: ApiErrorBody): ApiErrorBody {
    if (typeof body.msg !== 'string') return body;
    const msg = redactCredentials(body.msg, this.apiKey);
    return { ...body, msg: msg.length > ERROR_MSG_MAX ? `${msg.slice(0, ERROR_MSG_MAX)}…` : msg };
  }

  /**
   * Closes the connections. Requests in flight may finish within `graceMs`; then they are
   * aborted: a shutdown past its drain deadline must not wait out a hung API's timeout.
   * (undici's destroy() after close() leaves in-flight requests hanging: one or the other.)
   */
  async close(graceMs = Number.POSITIVE_INFINITY): Promise<void> {
    if (this.opts.dispatcher) return;
    if (graceMs === Number.POSITIVE_INFINITY) return this.dispatcher.close();
    const deadline = Date.now() + graceMs;
    while (this.inFlight > 0 && Date.now() < deadline) await defaultSleep(Math.min(25, graceMs));
    await (this.inFlight > 0 ? this.dispatcher.destroy() : this.dispatcher.close());
  }
}
