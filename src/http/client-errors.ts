import { STATUS_CODES, type Server } from 'node:http';
import { envelope } from '../errors';

/** The body of an error answered before any route runs, in the app's error shape. */
export type ErrorBody = (status: number, message: string) => unknown;

/**
 * Requests Node's HTTP parser refuses before Koa sees them (headers over 16 KB, malformed request
 * lines) would get a bare status line with no body: they get the app's JSON error shape instead.
 */
export function answerClientErrors(server: Server, body: ErrorBody = envelope): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'HPE_HEADER_TIMEOUT' ? 408 : 400;
    const message = status === 431 ? 'request headers too large' : status === 408 ? 'request headers too slow' : 'malformed HTTP request';
    const json = JSON.stringify(body(status, message));
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
    );
  });
}
