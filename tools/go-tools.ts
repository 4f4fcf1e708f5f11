/**
 * The Go programs the project runs, each built once per machine from its Go module by
 * tools/go-install.sh into <repo>/.tools/bin, under a lock so concurrent callers (npm start, Jest
 * workers, npm run cluster) build it only once. Order of lookup: the tool's own variable (e.g.
 * TEMPORAL_CLI), then `name` on PATH (the Temporal CLI only), then the cached build, else build it.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, readdirSync, readFileSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { prefixedStderr, repoRoot, type LogFn } from '../devnet/process';

export interface GoTool {
  /** What the build log and errors call it. */
  title: string;
  /** A module path on the Go module proxy, or a folder of this repository holding a module of ours. */
  module: string;
  /** The module's version; for a folder of ours, a hash of its files (so an edit rebuilds it). */
  version: string;
  /** Main packages (folder inside the module) to build, and the file name of each binary. */
  binaries: { pkg: string; name: string }[];
  /** A variable naming an existing binary (of the first package), which skips the build. */
  envVar?: string;
  /** Also look for the first binary on PATH. */
  onPath?: boolean;
  /** Cache the binaries under their plain names (default: `<name>-<version>`, so a new pin rebuilds). */
  plainNames?: boolean;
}

/** The Temporal CLI, which embeds the dev server. v1.5.1 is the last tag `go install` accepts (DESIGN §3). */
export const TEMPORAL_CLI: GoTool = {
  title: 'the Temporal CLI',
  module: 'github.com/temporalio/cli',
  version: 'v1.5.1',
  binaries: [{ pkg: 'cmd/temporal', name: 'temporal' }],
  envVar: 'TEMPORAL_CLI',
  onPath: true,
  plainNames: true, // .tools/bin/temporal: the path the README gives operators
};

/**
 * The Temporal server (not the dev server) and its SQL schema tool, of the version docker-compose.yml
 * runs (temporalio/auto-setup:1.29.1; a unit test keeps the two equal): `npm run cluster` runs it on
 * PostgreSQL with several history shards (temporal/cluster-server.ts).
 */
export const TEMPORAL_SERVER: GoTool = {
  title: 'the Temporal server',
  module: 'go.temporal.io/server',
  version: 'v1.29.1',
  binaries: [
    { pkg: 'cmd/server', name: 'temporal-server' },
    { pkg: 'cmd/tools/sql', name: 'temporal-sql-tool' },
  ],
};

/**
 * The Temporal UI server (the web UI with its assets embedded), of the version the Temporal CLI above
 * embeds for `npm start` (its go.mod requires github.com/temporalio/ui-server/v2 v2.42.1), so both
 * stacks show operators the same UI: `npm run cluster` serves it on TEMPORAL_UI_URL (temporal/cluster-ui.ts).
 */
export const TEMPORAL_UI_SERVER: GoTool = {
  title: 'the Temporal UI server',
  module: 'github.com/temporalio/ui-server/v2',
  version: 'v2.42.1',
  binaries: [{ pkg: 'cmd/server', name: 'temporal-ui-server' }],
};

/** A hash of the files of a module folder of ours: its cached build is named after it. */
function folderVersion(folder: string): string {
  const hash = createHash('sha256');
  const dir = path.join(repoRoot(), folder);
  for (const file of readdirSync(dir).sort()) {
    if (!/^(go\.mod|go\.sum|.*\.go)$/.test(file)) continue;
    hash
      .update(`${file}\0`)
      .update(readFileSync(path.join(dir, file)))
      .update('\0');
  }
  return hash.digest('hex').slice(0, 12);
}

/**
 * Compose v2's own loader, with no container engine (tools/compose-config/main.go on compose-spec's
 * compose-go, the library `docker compose` is built on): prints a compose file's model as JSON, as
 * `docker compose config` does. The unit tests check docker-compose.yml with it.
 */
export const COMPOSE_CONFIG: GoTool = {
  title: 'compose-config',
  module: './tools/compose-config',
  version: folderVersion('tools/compose-config'),
  binaries: [{ pkg: '.', name: 'compose-config' }],
};

const BINARY_SUFFIX = process.platform === 'win32' ? '.exe' : '';

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** Where the project caches its own builds. */
export const goToolsDir = (): string => path.join(repoRoot(), '.tools', 'bin');

/** Where the project's own build of `tool`'s binary `name` (default: its first) lives. */
export function cachedGoToolPath(tool: GoTool, name = tool.binaries[0]!.name): string {
  return path.join(goToolsDir(), fileName(tool, name));
}

const fileName = (tool: GoTool, name: string) => `${name}${tool.plainNames ? '' : `-${tool.version}`}${BINARY_SUFFIX}`;

/** The tool's first binary if one exists already, without building. */
export function findGoTool(tool: GoTool): string | undefined {
  const fromEnv = tool.envVar ? process.env[tool.envVar] : undefined;
  if (fromEnv) {
    // An explicit setting that is wrong is a configuration error, not a reason to build.
    if (!isExecutable(fromEnv)) throw new Error(`${tool.envVar}=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const onPath = tool.onPath ? findOnPath(tool.binaries[0]!.name + BINARY_SUFFIX) : undefined;
  if (onPath) return onPath;
  return tool.binaries.every((b) => isExecutable(cachedGoToolPath(tool, b.name))) ? cachedGoToolPath(tool) : undefined;
}

/** The tool's first binary, built first if needed; its other binaries sit beside it (cachedGoToolPath). */
export async function ensureGoTool(tool: GoTool, opts: { log?: LogFn } = {}): Promise<string> {
  const found = findGoTool(tool);
  if (found) return found;
  const log = opts.log ?? prefixedStderr(tool.binaries[0]!.name);
  const built = () => tool.binaries.every((b) => isExecutable(cachedGoToolPath(tool, b.name)));
  await withBuildLock(cachedGoToolPath(tool), log, tool.title, async () => {
    // Another process may have finished the build while we waited for the lock.
    if (!built()) await runBuildScript(tool, log);
  });
  if (!built())
    throw new Error(`building ${tool.title} did not produce ${tool.binaries.map((b) => cachedGoToolPath(tool, b.name)).join(', ')}`);
  return cachedGoToolPath(tool);
}

function runBuildScript(tool: GoTool, log: LogFn): Promise<void> {
  const script = path.join(repoRoot(), 'tools', 'go-install.sh');
  const module = tool.module.startsWith('.') ? path.join(repoRoot(), tool.module) : tool.module;
  const args = [script, module, tool.version, goToolsDir(), ...tool.binaries.map((b) => `${b.pkg}=${fileName(tool, b.name)}`)];
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn('bash', args, { cwd: repoRoot(), stdio: ['ignore', 'pipe', 'pipe'] });
    // go prints one "go: downloading ..." line per module; pass everything through so a slow build
    // visibly makes progress.
    for (const stream of [child.stdout, child.stderr]) {
      let buffered = '';
      stream.on('data', (chunk: Buffer) => {
        const lines = (buffered + chunk.toString()).split('\n');
        buffered = lines.pop() ?? '';
        lines.forEach((line) => log(line));
      });
      stream.on('end', () => buffered && log(buffered));
    }
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) {
        log(`${tool.title} ready after ${Math.round((Date.now() - started) / 1000)} s`);
        resolve();
      } else {
        const hint = tool.envVar ? `; set ${tool.envVar} to an existing binary to skip the build` : '';
        reject(new Error(`building ${tool.title} (${tool.module}@${tool.version}) failed (${signal ?? `exit code ${code}`})${hint}`));
      }
    });
  });
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A lock file beside the binary holding the builder's pid. Waiters poll it; a lock whose pid is dead
 * (builder crashed or was killed) is taken over. Builds take seconds to minutes, so polling once a
 * second is fine.
 */
async function withBuildLock(target: string, log: LogFn, title: string, fn: () => Promise<void>): Promise<void> {
  const lockFile = `${target}.lock`;
  await fs.mkdir(path.dirname(target), { recursive: true });
  let announced = false;
  for (;;) {
    try {
      const handle = await fs.open(lockFile, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number((await fs.readFile(lockFile, 'utf8').catch(() => '')).trim());
    // An empty lock is one being written, unless it stays empty (its writer died in between).
    const age = Date.now() - ((await fs.stat(lockFile).catch(() => undefined))?.mtimeMs ?? Date.now());
    if (holder ? !isAlive(holder) : age > 10_000) {
      log(`removing stale build lock of ${title} (holder ${holder || 'unknown'} is gone)`);
      await fs.rm(lockFile, { force: true });
      continue;
    }
    if (!announced) {
      log(`another process (${holder || 'unknown'}) is building ${title}; waiting for it`);
      announced = true;
    }
    await sleep(1000);
  }
  try {
    await fn();
  } finally {
    await fs.rm(lockFile, { force: true });
  }
}

/** Every tool by the name `npm run tools -- <name>` takes. */
export const GO_TOOLS: Record<string, GoTool> = {
  temporal: TEMPORAL_CLI,
  'compose-config': COMPOSE_CONFIG,
  'temporal-server': TEMPORAL_SERVER,
  'temporal-ui-server': TEMPORAL_UI_SERVER,
};

/** What `npm test` needs: the Temporal CLI (dev server) and the Compose loader. */
export const TEST_TOOLS = ['temporal', 'compose-config'];
