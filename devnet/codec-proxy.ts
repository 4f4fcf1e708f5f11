/**
 * DEVNET ONLY: the stand-in for the authenticating proxy README "For operators" puts in front of the
 * codec server. The Temporal UI calls its codec endpoint from the operator's browser with no token of
 * ours; the proxy adds `Authorization: Bearer CODEC_SERVER_TOKEN` on the way to the codec server and
 * passes everything else (CORS preflights included) through unchanged, so the codec server's own
 * checks (origin, body, sealed payloads) still decide. It listens on loopback only and authenticates
 * nobody: in production that is the real proxy's job.
 */
import { createServer, request, type Server } from 'node:http';

export interface CodecProxy {
  url: string;
  stop(): Promise<void>;
}

export async function startCodecProxy(opts: { port: number; codecServer: string; token: string }): Promise<CodecProxy> {
  const target = new URL(opts.codecServer);
  const server: Server = createServer((req, res) => {
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: target.host, authorization: `Bearer ${opts.token}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.once('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end('{"error":"the codec server did not answer"}');
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${opts.port}`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
