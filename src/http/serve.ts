import type Koa from 'koa';
import type { Client } from '@temporalio/client';
import type { Database } from '../db/orm';
import { answerClientErrors, type ErrorBody } from './client-errors';
import { tracing } from '../observability/tracing';

/**
 * Listens with a Koa app until SIGINT/SIGTERM, then closes the server, the Temporal connection and
 * the database, and exports the last spans when tracing is on (bounded at 5 s). Shared by the API and the top-up gateway processes.
 */
export function serveUntilSignal(
  app: Koa<any, any>,
  port: number,
  host: string,
  deps: { temporal: Client; db: Database },
  onListen: () => void,
  errorBody?: ErrorBody,
): void {
  const server = app.listen(port, host, onListen);
  answerClientErrors(server, errorBody);
  const stop = () => {
    server.close(async () => {
      await deps.temporal.connection.close();
      await deps.db.close();
      await tracing()?.shutdown();
      process.exit(0);
    });
    setTimeout(() => process.exit(0), 5000).unref();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
