import { Context } from '@temporalio/activity';

/**
 * Runs `work` while heartbeating every `everyMs`, so that with a short `heartbeatTimeout` a worker that
 * dies mid-call is noticed in seconds rather than at the activity's start-to-close timeout.
 */
export async function heartbeatWhile<T>(work: () => Promise<T>, everyMs = 500): Promise<T> {
  const beat = setInterval(() => Context.current().heartbeat(), everyMs);
  try {
    return await work();
  } finally {
    clearInterval(beat);
  }
}
