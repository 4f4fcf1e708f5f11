import type { Organization } from '../db/entities';
import { ApiError } from '../errors';

/** Who is calling, as established by the HTTP layer's auth middleware. */
export interface AuthContext {
  organizationId: string;
  method: 'api_key' | 'session';
  apiKeyId?: string;
  /** Mode of the API key (test keys settle testnets only). Undefined for sessions. */
  testNet?: boolean;
  address?: string;
  /** The organization's row as read with the API key, and when (ms): see callerOrganization. */
  organizationRead?: { row: Organization | null; at: number };
}

/**
 * Test keys settle testnets only and live keys mainnets only (403 otherwise). Sessions carry no key
 * mode and are not restricted here.
 */
export function assertKeyModeAllows(auth: AuthContext, network: { testnet: boolean }): void {
  if (keyModeAllows(auth, network)) return;
  throw new ApiError(403, auth.testNet ? 'test keys settle testnets only' : 'live keys settle mainnets only');
}

export const keyModeAllows = (auth: AuthContext, network: { testnet: boolean }) =>
  auth.method !== 'api_key' || auth.testNet === undefined || auth.testNet === network.testnet;
