import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { LookupAddress } from 'node:dns';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ArtifactRefused,
  checkArtifactUrl,
  checkedLookup,
  hostAllowed,
  isPublicAddress,
  openArtifact,
} from '../../src/media/artifact-download';
import { mediaConfig } from '../../src/media/config';
import { FsStore } from '../../src/media/fs-store';

/** Issue 39: media downloads follow only the provider's hosts, never into private ranges, never past a size cap. */

describe('which addresses an artifact may come from', () => {
  test.each([
    ['10.0.0.1'],
    ['10.255.255.255'],
    ['172.16.0.1'],
    ['172.31.255.255'],
    ['192.168.1.1'],
    ['127.0.0.1'],
    ['127.8.9.10'],
    ['169.254.169.254'], // cloud metadata
    ['100.64.0.1'], // shared (carrier-grade NAT)
    ['0.0.0.0'],
    ['192.0.2.7'],
    ['198.18.0.1'],
    ['224.0.0.1'],
    ['255.255.255.255'],
    ['::'],
    ['::1'],
    ['fc00::1'],
    ['fd12:3456::1'], // unique local
    ['fe80::1'], // link-local
    ['ff02::1'],
    ['2001:db8::1'],
    ['::ffff:10.0.0.1'], // IPv4-mapped, dotted
    ['::ffff:a00:1'], // IPv4-mapped, hex: 10.0.0.1
    ['::ffff:127.0.0.1'],
    ['::ffff:169.254.169.254'],
    ['::10.0.0.1'], // IPv4-compatible
    ['64:ff9b::a00:1'], // NAT64 of 10.0.0.1
    ['2002:a00:1::1'], // 6to4 of 10.0.0.1
    ['not an address'],
  ])('%s is not public', (ip) => {
    expect(isPublicAddress(ip)).toBe(false);
  });

  test.each([['8.8.8.8'], ['1.1.1.1'], ['172.32.0.1'], ['11.0.0.1'], ['2606:4700:4700::1111'], ['::ffff:8.8.8.8']])(
    '%s is public',
    (ip) => {
      expect(isPublicAddress(ip)).toBe(true);
    },
  );
});

describe('which hosts an artifact may be on', () => {
  const hosts = ['cdn.provider.example', '*.files.provider.example'];
  test('exact names and subdomains of a wildcard entry; not the wildcard apex, not a look-alike', () => {
    expect(hostAllowed('cdn.provider.example', hosts)).toBe(true);
    expect(hostAllowed('a.files.provider.example', hosts)).toBe(true);
    expect(hostAllowed('files.provider.example', hosts)).toBe(false);
    expect(hostAllowed('evilfiles.provider.example', hosts)).toBe(false);
    expect(hostAllowed('cdn.provider.example.evil.test', hosts)).toBe(false);
  });

  const rules = { hosts: ['cdn.provider.example', '10.1.2.3', '127.0.0.1'], privateHosts: ['127.0.0.1'] };
  const refusal = (url: string) => {
    try {
      checkArtifactUrl(new URL(url), rules);
      return undefined;
    } catch (err) {
      expect(err).toBeInstanceOf(ArtifactRefused);
      return (err as Error).message;
    }
  };
  test('a URL is refused before any connection: off the list, another scheme, a private IP literal even when listed', () => {
    expect(refusal('https://cdn.provider.example/a.mp4')).toBeUndefined();
    expect(refusal('https://CDN.Provider.Example./a.mp4')).toBeUndefined();
    expect(refusal('https://evil.example/a.mp4')).toBe('the artifact host evil.example is not on MEDIA_ARTIFACT_HOSTS');
    expect(refusal('file:///etc/passwd')).toBe('an artifact URL must be http(s), not file:');
    expect(refusal('http://10.1.2.3/a.mp4')).toBe('the artifact host 10.1.2.3 is a private or reserved address');
    // The URL parser's spellings of one address are one host.
    expect(refusal('http://0x0a010203/a.mp4')).toBe('the artifact host 10.1.2.3 is a private or reserved address');
    expect(refusal('http://[::ffff:a01:203]/a.mp4')).toBe('the artifact host ::ffff:a01:203 is not on MEDIA_ARTIFACT_HOSTS');
    // The devnet exception: the double's own address.
    expect(refusal('http://127.0.0.1:8610/a.mp4')).toBeUndefined();
  });
});

describe('the socket lookup resolves once and hands over only what it checked', () => {
  const answering = (addresses: LookupAddress[]) => (_host: string, cb: (err: NodeJS.ErrnoException | null, a: LookupAddress[]) => void) =>
    cb(null, addresses);
  const look = (addresses: LookupAddress[], options: { all?: boolean; family?: number }, mayBePrivate = false) =>
    new Promise<{ err: Error | null; address: unknown; family?: number }>((resolve) =>
      checkedLookup(mayBePrivate, answering(addresses))('cdn.provider.example', options as never, (err, address, family) =>
        resolve({ err, address, family }),
      ),
    );

  test('a name resolving to 10.x is refused; so is one with any private address among public ones', async () => {
    const alone = await look([{ address: '10.0.0.7', family: 4 }], {});
    expect(alone.err).toBeInstanceOf(ArtifactRefused);
    expect(alone.err!.message).toBe('cdn.provider.example resolves to 10.0.0.7, a private or reserved address');
    const mixed = await look(
      [
        { address: '93.184.216.34', family: 4 },
        { address: '::ffff:192.168.0.1', family: 6 },
      ],
      { all: true },
    );
    expect(mixed.err!.message).toBe('cdn.provider.example resolves to ::ffff:192.168.0.1, a private or reserved address');
  });

  test('public answers are handed over as asked: one address, all of them, or one family', async () => {
    const addresses = [
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ];
    expect(await look(addresses, {})).toEqual({ err: null, address: '93.184.216.34', family: 4 });
    expect(await look(addresses, { all: true })).toEqual({ err: null, address: addresses, family: undefined });
    expect(await look(addresses, { family: 6 })).toEqual({ err: null, address: '2606:2800:220:1::1', family: 6 });
  });

  test('a host that may be private (the devnet exception) gets its private answer', async () => {
    expect(await look([{ address: '127.0.0.1', family: 4 }], {}, true)).toEqual({ err: null, address: '127.0.0.1', family: 4 });
  });

  test('DNS rebinding: the socket connects to the address the lookup checked, resolved once per download', async () => {
    // The resolver answers this test's server first, then another address (as a rebinding attacker's
    // DNS would); it is asked once, and the request reaches the server.
    let asked = 0;
    const rebinding = (_host: string, cb: (err: NodeJS.ErrnoException | null, a: LookupAddress[]) => void) =>
      cb(null, [{ address: asked++ === 0 ? '127.0.0.1' : '127.0.0.2', family: 4 }]);
    let served = 0;
    const server = createServer((_req, res) => {
      served++;
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { body } = await openArtifact(
      `http://rebind.example:${(server.address() as AddressInfo).port}/a.mp4`,
      { hosts: ['rebind.example'], privateHosts: ['rebind.example'], maxBytes: 1024 },
      5_000,
      rebinding,
    );
    expect(Buffer.concat(await body.toArray()).toString()).toBe('ok');
    expect({ asked, served }).toEqual({ asked: 1, served: 1 });
    await new Promise<void>((r) => server.close(() => r()));
  });
});

describe('a download streams into the store through its cap', () => {
  let server: Server;
  let base: string;
  let sent = 0;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'x402-artifacts-'));
    server = createServer((req, res) => {
      if (req.url === '/small') return res.writeHead(200, { 'content-type': 'video/mp4' }).end('MP4 bytes');
      if (req.url === '/declared') return res.writeHead(200, { 'content-length': String(10 * 1024 * 1024) }).end();
      if (req.url === '/redirect') return res.writeHead(302, { location: 'http://elsewhere.example/a.mp4' }).end();
      // Chunked, without a length: 64 MiB as fast as it is read.
      res.writeHead(200, { 'content-type': 'video/mp4' });
      const piece = Buffer.alloc(64 * 1024);
      const pump = () => {
        while (sent < 64 * 1024 * 1024 && !res.destroyed) {
          sent += piece.length;
          if (!res.write(piece)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });
  const rules = { hosts: ['127.0.0.1'], privateHosts: ['127.0.0.1'], maxBytes: 1024 * 1024 };

  test('a body within the cap is stored whole, its size counted', async () => {
    const store = new FsStore(dir);
    const { body } = await openArtifact(`${base}/small`, rules);
    await store.put('job/0.mp4', body, 'video/mp4');
    expect(readFileSync(join(dir, 'job/0.mp4'), 'utf8')).toBe('MP4 bytes');
    expect(body.bytes).toBe(9);
  });

  test('a body past the cap fails the write, leaves no file, and stops the download well before its end', async () => {
    const store = new FsStore(dir);
    const { body } = await openArtifact(`${base}/big`, rules);
    await expect(store.put('job/1.mp4', body, 'video/mp4')).rejects.toThrow(
      new ArtifactRefused('the artifact is larger than 1048576 bytes'),
    );
    expect(readdirSync(join(dir, 'job'))).toEqual(['0.mp4', '0.mp4.type']);
    await new Promise((r) => setTimeout(r, 100));
    expect(sent).toBeLessThan(16 * 1024 * 1024);
  });

  test('a declared length over the cap is refused before the body is read', async () => {
    await expect(openArtifact(`${base}/declared`, rules)).rejects.toThrow(
      new ArtifactRefused('the artifact is larger than 1048576 bytes (it declares 10485760)'),
    );
  });

  test('a redirect to a host off the list is not followed', async () => {
    await expect(openArtifact(`${base}/redirect`, rules)).rejects.toThrow(
      new ArtifactRefused('the artifact download redirected: the artifact host elsewhere.example is not on MEDIA_ARTIFACT_HOSTS'),
    );
  });
});

describe('MEDIA_ARTIFACT_* configuration', () => {
  test("defaults: the provider's host; outside production the devnet double's loopback address may be private", () => {
    expect(mediaConfig({ env: {} }).artifacts).toEqual({ hosts: ['127.0.0.1'], privateHosts: ['127.0.0.1'], maxBytes: 512 * 1024 * 1024 });
    expect(mediaConfig({ env: { MEDIA_PROVIDER_URL: 'https://api.provider.example' } }).artifacts).toEqual({
      hosts: ['api.provider.example'],
      privateHosts: [],
      maxBytes: 512 * 1024 * 1024,
    });
    // Production never takes the devnet exception by default.
    expect(mediaConfig({ env: {}, production: true }).artifacts.privateHosts).toEqual([]);
    expect(
      mediaConfig({ env: { MEDIA_ARTIFACT_HOSTS: ' CDN.Provider.Example., *.files.provider.example ', MEDIA_ARTIFACT_MAX_BYTES: '1000' } })
        .artifacts,
    ).toMatchObject({ hosts: ['cdn.provider.example', '*.files.provider.example'], maxBytes: 1000 });
  });
});
