// The HTTP server around the handlers: Fastify, set up so that whatever goes wrong before, around
// or instead of a handler (a malformed request, a body too large, an unknown path, a method the
// path does not take, shutting down, a thrown error) is answered in the API's one error body.
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { flattenOperations } from '../api/operations.ts';
import { EmulatorError, refuse } from './errors.ts';

/** Longest path parameter (an id, an agent name) the router takes; 414 beyond. */
const MAX_PATH_SEGMENT = 100;

type FrameworkError = Error & { statusCode?: number; code?: string };

/** An answer written to the socket itself, where there is no reply object (parser errors, CONNECT). */
function endSocket(socket: Duplex, err: EmulatorError): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(err.body());
  socket.end(
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

const pathRegex = (p: string) => new RegExp(`^${p.replace(/\{\w+\}/g, '[^/]+')}/?$`);

const send = (reply: FastifyReply, err: EmulatorError) => {
  reply.code(err.status).headers(err.headers).send(err.body());
};

/**
 * Errors the HTTP parser finds before any route runs (a malformed request, headers or a URI too
 * large), answered on the socket. `awaitingBody`: the sockets whose request's headers arrived.
 */
const clientError = (awaitingBody: WeakSet<object>) => (err: NodeJS.ErrnoException, socket: Duplex) => {
  // the connection ended inside a body (its headers complete): a body shorter than its
  // Content-Length, which the public API calls an unreadable body (ERR_NGROK_212)
  if (err.code === 'HPE_INVALID_EOF_STATE' && awaitingBody.has(socket))
    return endSocket(
      socket,
      refuse('ERR_INVALID_CONTENT_LENGTH', {}, 'the body ended before its Content-Length'),
    );
  const [status, code, msg] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'ERR_HEADERS_TOO_LARGE', 'request header fields too large']
      : err.code === 'HPE_URI_TOO_LONG'
        ? [414, 'ERR_URI_TOO_LONG', 'the request URI is too long']
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'ERR_REQUEST_TIMEOUT', 'the request took too long to arrive']
          : [400, 'ERR_BAD_REQUEST', 'the request is not valid HTTP'];
  endSocket(socket, new EmulatorError(status, code, msg));
};

/** Any error, the framework's too, as the API's error. */
function apiError(
  app: FastifyInstance,
  bodyLimit: number,
  err: FrameworkError,
  req: FastifyRequest,
): EmulatorError {
  if (err instanceof EmulatorError) return err;
  const path = req.url.split('?')[0]!;
  switch (err.code) {
    case 'FST_ERR_BAD_URL':
      return new EmulatorError(
        400,
        'ERR_INVALID_PATH',
        `the path ${path} is not valid: it has a malformed percent-encoding`,
      );
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new EmulatorError(
        414,
        'ERR_URI_TOO_LONG',
        `a segment of the path is longer than ${MAX_PATH_SEGMENT} characters`,
      );
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return refuse('ERR_INVALID_CONTENT_LENGTH', {}, 'the request body does not match its Content-Length');
  }
  const status = err.statusCode ?? 500;
  if (status === 413)
    return new EmulatorError(413, 'ERR_BODY_TOO_LARGE', `the request body is larger than ${bodyLimit} bytes`);
  if (status === 415) {
    const type = req.headers['content-type'];
    return type === undefined
      ? refuse('ERR_MISSING_CONTENT_TYPE', {}, 'request bodies must be application/json')
      : refuse('ERR_UNSUPPORTED_MEDIA_TYPE', { CTYPE: type }, 'request bodies must be application/json');
  }
  if (status >= 400 && status < 500) {
    const code =
      status === 400
        ? 'ERR_BAD_REQUEST'
        : `ERR_${STATUS_CODES[status]?.toUpperCase().replace(/\W+/g, '_') ?? status}`;
    return new EmulatorError(status, code, err.message);
  }
  app.log.error(err);
  return new EmulatorError(500, 'ERR_INTERNAL', 'internal error');
}

/** Node's own answers, outside Fastify: an Expect it cannot meet (417) and CONNECT (the socket would just be closed). */
function nodeAnswers(app: FastifyInstance): void {
  app.server.on('checkExpectation', (req, res) => {
    const err = new EmulatorError(
      417,
      'ERR_EXPECTATION_FAILED',
      `Expect: ${String(req.headers.expect)} is not supported (only 100-continue)`,
    );
    const body = JSON.stringify(err.body());
    res.writeHead(err.status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    res.end(body);
  });
  app.server.on('connect', (req: { url?: string }, socket: Duplex) =>
    endSocket(
      socket,
      new EmulatorError(405, 'ERR_METHOD_NOT_ALLOWED', `CONNECT is not allowed on ${req.url ?? ''}`),
    ),
  );
}

/** Only JSON bodies: Fastify's built-in text/plain parser would hand a string to the handlers. */
function jsonBodiesOnly(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    if (body === '') return done(null, undefined);
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(
        refuse('ERR_INVALID_JSON', { CTYPE: 'application/json' }, 'the request body is not valid JSON'),
        undefined,
      );
    }
  });
}

/** A path the API has with another method (405, naming the methods it takes), or no such path (404). */
function unknownRoutes(app: FastifyInstance): void {
  const table = flattenOperations();
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0]!;
    const allowed = table.filter(([, d]) => pathRegex(d.path).test(path)).map(([, d]) => d.method);
    if (allowed.length) {
      reply.header('allow', [...new Set(allowed)].join(', '));
      return send(
        reply,
        new EmulatorError(405, 'ERR_METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${path}`),
      );
    }
    // not a missing resource: a path the API does not have (clients must not read it as "deleted")
    return send(
      reply,
      new EmulatorError(
        404,
        'ERR_NO_SUCH_PATH',
        `the API has no path ${req.method} ${path}: check the API reference`,
      ),
    );
  });
}

export interface AppOptions {
  logger?: boolean;
  /** Request body limit in bytes (413 above it). */
  bodyLimit: number;
}

/** A Fastify instance without routes whose every framework answer is the API's. */
export function createApp(opts: AppOptions): FastifyInstance {
  const { bodyLimit } = opts;
  /** Sockets whose current request's headers arrived: an end of input now is inside its body. */
  const awaitingBody = new WeakSet<object>();
  let closing = false;
  const app: FastifyInstance = Fastify({
    logger: opts.logger ?? false,
    clientErrorHandler: clientError(awaitingBody),
    // What the router refuses before any route or hook runs (a malformed percent-encoding in
    // the path, an overlong path segment) would otherwise get Fastify's own body.
    frameworkErrors: (err, req, reply) => send(reply, apiError(app, bodyLimit, err, req)),
    // Node answers a request without Host itself (an empty 400): the hook below does, in the API's body.
    http: { requireHostHeader: false },
    // Requests that arrive while closing: Fastify's own 503 body otherwise (the hook below answers).
    return503OnClosing: false,
    bodyLimit,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_SEGMENT },
  });
  nodeAnswers(app);
  jsonBodiesOnly(app);
  app.setErrorHandler((err: FrameworkError, req, reply) => send(reply, apiError(app, bodyLimit, err, req)));
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', async (req, reply) => {
    awaitingBody.add(req.raw.socket);
    if (closing) {
      reply.header('connection', 'close');
      throw new EmulatorError(503, 'ERR_SERVICE_UNAVAILABLE', 'the emulator is shutting down');
    }
    if (req.raw.httpVersion === '1.1' && req.headers.host === undefined)
      throw new EmulatorError(400, 'ERR_BAD_REQUEST', 'missing Host header (HTTP/1.1 requires it)');
  });

  unknownRoutes(app);
  app.addHook('onResponse', async (req) => {
    awaitingBody.delete(req.raw.socket);
  });
  return app;
}
