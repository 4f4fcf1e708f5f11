/**
 * A dependency the gateway needs for this request did not answer (the destination chain, or a
 * source chain's RPC): answered 503 + `Retry-After` with `errorReason` (src/topup/app.ts), never 500.
 */
export class TopupUnavailable extends Error {
  constructor(
    message: string,
    readonly reason: 'destination_unavailable' | 'source_unavailable' = 'destination_unavailable',
  ) {
    super(message);
  }
}
