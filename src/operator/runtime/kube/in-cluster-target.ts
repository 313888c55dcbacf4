// The pod's service account, as client-go's rest.InClusterConfig reads it: the API server at
// $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT over HTTPS, trusting the folder's ca.crt,
// with the folder's token as a bearer token. The kubelet rotates the token (and, with the
// cluster's CA, ca.crt) by swapping the folder's files: both are read again at most once a
// second, and a changed CA gets a new connection pool.
import { readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { join } from 'node:path';
import { Agent } from 'undici';
import { firstLine, KubeConfigError, type KubeTarget, reusedBriefly } from './kube-target.ts';

/** TCP keep-alive probes after 30 s idle, as client-go's dialer (cloud load balancers drop idle flows at 60 s). */
const KEEP_ALIVE_MS = 30_000;

export function inClusterTarget(dir: string): KubeTarget {
  const host = process.env.KUBERNETES_SERVICE_HOST!;
  const port = process.env.KUBERNETES_SERVICE_PORT || '443';
  const tokenFile = join(dir, 'token');
  const caFile = join(dir, 'ca.crt');
  const read = (file: string, what: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new KubeConfigError(
        `in-cluster: cannot read the service account ${what} at ${file}: ${firstLine(err)}`,
      );
    }
  };
  // at start, so a pod without its token says so before anything else
  read(tokenFile, 'token');
  let pool: { ca: string; agent: Agent } | undefined;
  return {
    server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
    context: '(in-cluster)',
    auth: reusedBriefly(async () => {
      const token = read(tokenFile, 'token').trim();
      if (!token) throw new KubeConfigError(`in-cluster: the service account token at ${tokenFile} is empty`);
      const ca = read(caFile, 'CA certificate');
      if (pool?.ca !== ca) {
        void pool?.agent.close();
        // an empty ca.crt leaves Node's trusted roots, as client-go does when it cannot load one
        pool = {
          ca,
          agent: new Agent({
            connect: { ...(ca.trim() ? { ca } : {}), keepAlive: true, keepAliveInitialDelay: KEEP_ALIVE_MS },
          }),
        };
      }
      return { headers: { authorization: `Bearer ${token}` }, dispatcher: pool.agent };
    }),
  };
}
