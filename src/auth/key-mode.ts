import { ApiError } from '../errors';

/** Who is calling, as established by the HTTP layer's auth middleware. */
export interface AuthContext {
  organizationId: string;
  method: 'api_key' | 'session';
  apiKeyId?: string;
  /** Mode of the API key (test keys settle testnets only). Undefined for sessions. */
  testNet?: boolean;
  address?: string;
}

/**
 * Test keys settle testnets only and live keys mainnets only (403 otherwise). Sessions carry no key
 * mode and are not restricted here.
 */
export function assertKeyModeAllows(auth: AuthContext, network: { testnet: boolean }): void {
  if (auth.method !== 'api_key' || auth.testNet === undefined) return;
  if (auth.testNet && !network.testnet) throw new ApiError(403, 'test keys settle testnets only');
  if (!auth.testNet && network.testnet) throw new ApiError(403, 'live keys settle mainnets only');
}
