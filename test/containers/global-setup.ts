// containers: the shipped image, built here from the Dockerfile (image-build.sh: docker's cache
// makes an unchanged build a few seconds), and the control-plane images. Needs a Docker engine
// (engine.sh starts one where it can); without one the suite is skipped with the reason, except
// in CI, where it is mandatory.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { containersUnavailable, controlPlaneImages } from '../../src/localcluster/containers.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    containersSkip: string;
    image: string;
  }
}

export const IMAGE = process.env.EDGE_TEST_IMAGE ?? 'edge-operator:dev';

export default async function setup(project: TestProject) {
  const skip = (why: string) => {
    if (process.env.CI) throw new Error(`${why} (the containers suite is mandatory in CI)`);
    process.stderr.write(`\n${why}\n`);
    project.provide('containersSkip', why);
    project.provide('image', IMAGE);
  };
  const run = (script: string, args: string[] = []) =>
    execFileSync(join(REPO_ROOT, 'test/containers', script), args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, IMAGE },
      encoding: 'utf8',
    });
  try {
    // the engine that answers, or (as root) Debian's docker.io installed and started
    run('engine.sh');
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    return skip(`containers skipped: ${(err.stderr || err.message).trim()}`);
  }
  const engine = await containersUnavailable([]);
  if (engine) return skip(`containers skipped: ${engine}`);
  try {
    run('images.sh', ['controlplane']);
    process.stderr.write(`${run('image-build.sh').trim()}\n`);
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    return skip(`containers skipped: the images could not be made: ${(err.stderr || err.message).trim()}`);
  }
  const images = controlPlaneImages(REPO_ROOT);
  const missing = await containersUnavailable([IMAGE, images.apiserver, images.etcd]);
  if (missing) return skip(`containers skipped: ${missing}`);
  project.provide('containersSkip', '');
  project.provide('image', IMAGE);
}
