import type Router from '@koa/router';
import type { ServiceDeps } from '../../deps';
import type { HttpState } from '../../http/context';
import { jsonBody } from '../../http/json-body';
import { requireApiKey, requireOperator } from '../middleware/auth';
import { gatewayBalances, getWithdrawal, startWithdrawal } from '../../gateway/withdrawal-service';

/**
 * The facilitator's own gateway-wallet account (our endpoints, not in the spec; see
 * docs/decisions/batched-payments-and-withdrawals.md): balance views and durable withdrawals.
 * API key auth, operators only (OPERATOR_ADDRESSES); errors use the generic envelope.
 */
export function registerGatewayRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  router.get('/v1/gateway/balances', requireApiKey(deps), requireOperator(deps), async (ctx) => {
    ctx.body = await gatewayBalances(deps, ctx.state.auth!, ctx.query.network);
  });
  router.post('/v1/gateway/withdrawals', requireApiKey(deps), requireOperator(deps), jsonBody(deps.config.BODY_LIMIT), async (ctx) => {
    const out = await startWithdrawal(deps, ctx.state.em, ctx.state.auth!, ctx.state.requestId, ctx.request.body);
    ctx.status = out.status;
    ctx.body = out.body;
  });
  router.get('/v1/gateway/withdrawals/:id', requireApiKey(deps), requireOperator(deps), async (ctx) => {
    ctx.body = await getWithdrawal(ctx.state.em, ctx.state.auth!, ctx.params.id!);
  });
}
