import type { EntityManager } from '@mikro-orm/core';
import type { ParameterizedContext } from 'koa';
import type { AuthContext } from '../auth/key-mode';
import type { Logger } from '../logger';
import type { ErrorShape } from '../errors';

/** Per-request state of both HTTP apps (the API and the top-up gateway). */
export interface HttpState {
  requestId: string;
  log: Logger;
  em: EntityManager;
  auth?: AuthContext;
  errorShape?: ErrorShape;
}

export type HttpContext = ParameterizedContext<HttpState>;
