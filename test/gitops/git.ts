// A Git repository served on loopback over smart HTTP: a small HTTP server in front of
// Debian's `git http-backend` (CGI), which Flux's source-controller (go-git) and Argo CD's
// repo-server (the git CLI) both read. Tests change the repository through a working clone
// beside it (commit + push over the file system), never through the server.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { dirname, join } from 'node:path';

export interface GitServer {
  /** http://127.0.0.1:<port>/<name>.git */
  url: string;
  close(): Promise<void>;
}

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'gitops suite',
      GIT_AUTHOR_EMAIL: 'gitops@example.com',
      GIT_COMMITTER_NAME: 'gitops suite',
      GIT_COMMITTER_EMAIL: 'gitops@example.com',
    },
  }).trim();

/** Creates root/<name>.git (bare) and root/work (its clone, branch main). */
export function createRepository(root: string, name: string): { bare: string; work: string } {
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  const bare = join(root, `${name}.git`);
  git(root, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  // the smart HTTP server answers only repositories marked for export (or GIT_HTTP_EXPORT_ALL)
  writeFileSync(join(bare, 'git-daemon-export-ok'), '');
  const work = join(root, 'work');
  git(root, 'clone', '--quiet', bare, work);
  git(work, 'checkout', '--quiet', '-B', 'main');
  return { bare, work };
}

/**
 * Writes (string) or deletes (null) files under the working clone, commits them and pushes
 * main; returns the new commit's sha.
 */
export function commit(work: string, message: string, files: Record<string, string | null>): string {
  for (const [path, content] of Object.entries(files)) {
    const f = join(work, path);
    if (content === null) rmSync(f, { force: true });
    else {
      mkdirSync(dirname(f), { recursive: true });
      writeFileSync(f, content);
    }
  }
  git(work, 'add', '--all');
  git(work, 'commit', '--quiet', '--allow-empty', '-m', message);
  git(work, 'push', '--quiet', 'origin', 'main');
  return git(work, 'rev-parse', 'HEAD');
}

/** Serves every repository under root read-only at http://127.0.0.1:<port>/. */
export async function serveGit(root: string): Promise<{ base: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GIT_PROJECT_ROOT: root,
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      REQUEST_METHOD: req.method ?? 'GET',
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
      SERVER_PROTOCOL: 'HTTP/1.1',
      GATEWAY_INTERFACE: 'CGI/1.1',
    };
    if (req.headers['content-length']) env.CONTENT_LENGTH = req.headers['content-length'];
    if (req.headers['content-encoding']) env.HTTP_CONTENT_ENCODING = req.headers['content-encoding'];
    if (req.headers['git-protocol']) env.GIT_PROTOCOL = String(req.headers['git-protocol']);
    const cgi = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let headersDone = false;
    let stderr = '';
    cgi.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    cgi.stdout.on('data', (d: Buffer) => {
      if (headersDone) {
        res.write(d);
        return;
      }
      head = Buffer.concat([head, d]);
      let end = head.indexOf('\r\n\r\n');
      let sep = 4;
      if (end < 0) {
        end = head.indexOf('\n\n');
        sep = 2;
      }
      if (end < 0) return;
      headersDone = true;
      let status = 200;
      for (const line of head.subarray(0, end).toString().split(/\r?\n/)) {
        const i = line.indexOf(':');
        if (i < 0) continue;
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === 'status') status = Number.parseInt(v, 10);
        else res.setHeader(k, v);
      }
      res.writeHead(status);
      res.write(head.subarray(end + sep));
    });
    cgi.on('close', (code) => {
      if (!headersDone) {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`git http-backend exited with ${code}: ${stderr}`);
        return;
      }
      res.end();
    });
    cgi.on('error', (e) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(e));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    base: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
