import { Context } from '@temporalio/activity';

/**
 * Heartbeats the running activity. A local activity has no heartbeat (the SDK keeps its workflow task
 * alive instead), so there it does nothing: the same waiting code serves both kinds.
 */
export function heartbeat(): void {
  const ctx = Context.current();
  if (!ctx.info.isLocal) ctx.heartbeat();
}
