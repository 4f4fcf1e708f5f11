import net from 'node:net';
import { findFreePort, spawnManaged, waitUntil, type ManagedProcess } from '../../devnet/process';
import { searchAttributeCliFlags } from '../../src/temporal/search-attributes';

const node = process.execPath;

/** Spawns `node -e script` and resolves once it has printed `ready`. */
async function spawnNode(script: string): Promise<{ proc: ManagedProcess; lines: string[] }> {
  const lines: string[] = [];
  const proc = spawnManaged('child', node, ['-e', script], { log: (line) => lines.push(line) });
  await waitUntil('child to be ready', async () => lines.includes('ready'), { timeoutMs: 10_000, process: proc });
  return { proc, lines };
}

describe('findFreePort', () => {
  it('returns a port that can be bound on 127.0.0.1', async () => {
    const port = await findFreePort();
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: '127.0.0.1', port }, resolve);
    });
    expect((server.address() as net.AddressInfo).port).toBe(port);
    await new Promise((resolve) => server.close(resolve));
  });
});

describe('waitUntil', () => {
  it('returns the first value the probe produces', async () => {
    let calls = 0;
    const value = await waitUntil('third call', async () => (++calls === 3 ? 'done' : undefined), {
      timeoutMs: 5000,
      intervalMs: 1,
    });
    expect(value).toBe('done');
    expect(calls).toBe(3);
  });

  it('times out with the last probe error in the message', async () => {
    const started = Date.now();
    await expect(
      waitUntil(
        'never',
        async () => {
          throw new Error('connection refused');
        },
        { timeoutMs: 200, intervalMs: 20 },
      ),
    ).rejects.toThrow('timed out after 200 ms waiting for never: connection refused');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('gives up as soon as the watched process exits, quoting its output', async () => {
    const proc = spawnManaged('crasher', node, ['-e', 'console.error("port taken"); process.exit(3)'], {
      log: () => undefined,
    });
    await expect(waitUntil('a port that never opens', async () => false, { timeoutMs: 30_000, process: proc })).rejects.toThrow(
      /crasher exited with code 3 while waiting for a port that never opens\nport taken/,
    );
  });
});

describe('spawnManaged / stop', () => {
  it('passes each output line to the logger', async () => {
    const { proc, lines } = await spawnNode('console.log("a\\nb"); console.log("ready"); setInterval(() => {}, 1000)');
    expect(lines).toEqual(['a', 'b', 'ready']);
    await proc.stop();
  });

  it('stops a well-behaved child with SIGINT', async () => {
    const { proc } = await spawnNode('console.log("ready"); setInterval(() => {}, 1000)');
    expect(await proc.stop({ timeoutMs: 5000 })).toEqual({ code: null, signal: 'SIGINT' });
    expect(proc.hasExited).toBe(true);
    // A second stop is a no-op that reports the same exit.
    expect(await proc.stop()).toEqual({ code: null, signal: 'SIGINT' });
  });

  it('escalates to SIGKILL when the child ignores SIGINT', async () => {
    const { proc } = await spawnNode('process.on("SIGINT", () => {}); console.log("ready"); setInterval(() => {}, 1000)');
    const started = Date.now();
    expect(await proc.stop({ timeoutMs: 300 })).toEqual({ code: null, signal: 'SIGKILL' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('reports a binary that cannot be spawned instead of throwing', async () => {
    const proc = spawnManaged('missing', '/nonexistent/binary', [], { log: () => undefined });
    const info = await proc.exited;
    expect(info.error?.message).toMatch(/ENOENT/);
  });
});

describe('search attribute CLI flags', () => {
  it('registers the five X402 keyword attributes and the X402Stuck flag', () => {
    expect(searchAttributeCliFlags()).toEqual([
      '--search-attribute',
      'X402Kind=Keyword',
      '--search-attribute',
      'X402Network=Keyword',
      '--search-attribute',
      'X402Payer=Keyword',
      '--search-attribute',
      'X402State=Keyword',
      '--search-attribute',
      'X402Organization=Keyword',
      '--search-attribute',
      'X402Stuck=Bool',
    ]);
  });
});
