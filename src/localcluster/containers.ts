// The local control plane as containers, through testcontainers on whatever Docker engine
// answers: seconds when the images are there (pulled, or the stand-ins test/containers/images.sh
// builds), where the process path first needs the Go build. Host network only: the API server
// and etcd listen on loopback ports exactly as the processes do.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ContainerSpec {
  name: string;
  image: string;
  entrypoint: string;
  args: string[];
  /** Host paths mounted read-only at the same path inside. */
  readOnly?: string[];
  /** Paths inside that get an empty tmpfs. */
  tmpfs?: string[];
  labels?: Record<string, string>;
}

/** The upstream images of the versions test/controlplane pins (go.mod). */
export function controlPlaneImages(repoRoot: string): { apiserver: string; etcd: string } {
  const version = (dir: string, mod: string) => {
    const gomod = readFileSync(join(repoRoot, 'test/controlplane', dir, 'go.mod'), 'utf8');
    const m = new RegExp(`^\\s*${mod.replaceAll('.', '\\.')}\\s+(v\\S+)`, 'm').exec(gomod);
    if (!m) throw new Error(`test/controlplane/${dir}/go.mod does not pin ${mod}`);
    return m[1]!;
  };
  return {
    apiserver: `registry.k8s.io/kube-apiserver:${version('kube', 'k8s.io/kubernetes')}`,
    etcd: `registry.k8s.io/etcd:${version('etcd', 'go.etcd.io/etcd/server/v3').slice(1)}-0`,
  };
}

async function testcontainers() {
  // host network only, and no Ryuk (its image cannot be pulled everywhere): the control
  // plane outlives `cluster up` on purpose and `cluster down` removes it
  process.env.TESTCONTAINERS_HOST_OVERRIDE ??= '127.0.0.1';
  process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
  return import('testcontainers');
}

/** Why containers cannot be used here, or undefined when the engine and images are ready. */
export async function containersUnavailable(images: string[]): Promise<string | undefined> {
  let tc: Awaited<ReturnType<typeof testcontainers>>;
  try {
    tc = await testcontainers();
  } catch {
    return 'testcontainers is not installed (a development dependency)';
  }
  let client: Awaited<ReturnType<typeof tc.getContainerRuntimeClient>>;
  try {
    client = await tc.getContainerRuntimeClient();
  } catch {
    return 'no Docker engine answers (DOCKER_HOST or the default socket)';
  }
  for (const image of images) {
    const name = tc.ImageName.fromString(image);
    if (await client.image.exists(name)) continue;
    try {
      await client.image.pull(name);
    } catch {
      return `image ${image} is neither present nor pullable (test/containers/images.sh builds a stand-in)`;
    }
  }
  return undefined;
}

/** Starts a container (replacing one of the same name) and returns its id. */
export async function startContainer(spec: ContainerSpec): Promise<string> {
  const tc = await testcontainers();
  await removeContainers([spec.name]);
  const started = await new tc.GenericContainer(spec.image)
    .withName(spec.name)
    .withNetworkMode('host')
    .withEntrypoint([spec.entrypoint])
    .withCommand(spec.args)
    .withBindMounts((spec.readOnly ?? []).map((p) => ({ source: p, target: p, mode: 'ro' as const })))
    .withTmpFs(Object.fromEntries((spec.tmpfs ?? []).map((p) => [p, 'rw'])))
    .withLabels({ 'app.kubernetes.io/part-of': 'edge-operator', ...spec.labels })
    .withPullPolicy({ shouldPull: () => false })
    .start();
  return started.getId();
}

export async function containerRunning(idOrName: string): Promise<boolean> {
  const tc = await testcontainers();
  const client = await tc.getContainerRuntimeClient();
  try {
    return (await client.container.inspect(client.container.getById(idOrName))).State.Running;
  } catch {
    return false;
  }
}

export async function containerLogs(idOrName: string, lines = 15): Promise<string> {
  const tc = await testcontainers();
  const client = await tc.getContainerRuntimeClient();
  try {
    const c = client.container.getById(idOrName);
    const raw = (await c.logs({
      stdout: true,
      stderr: true,
      tail: lines,
      follow: false,
    })) as unknown as Buffer;
    // the multiplexed stream: 8-byte frame headers before each chunk
    const out: string[] = [];
    for (let i = 0; i + 8 <= raw.length; ) {
      const size = raw.readUInt32BE(i + 4);
      out.push(raw.subarray(i + 8, i + 8 + size).toString('utf8'));
      i += 8 + size;
    }
    return out.join('');
  } catch (e) {
    return `(no logs: ${(e as Error).message})`;
  }
}

/** Removes containers by id or name; absent ones are fine. */
export async function removeContainers(idsOrNames: string[]): Promise<void> {
  const tc = await testcontainers();
  const client = await tc.getContainerRuntimeClient();
  for (const id of idsOrNames) {
    await client.container
      .getById(id)
      .remove({ force: true, v: true })
      .catch(() => {});
  }
}
