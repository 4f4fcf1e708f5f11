import { BaseError, ContractFunctionRevertedError, ContractFunctionZeroDataError, decodeErrorResult, type Abi, type Hex } from 'viem';
import { gasCeilingRefusal } from '../chains/evm/gas-ceilings';

/**
 * Tells a contract's refusal (a revert, or no such function) from a transport failure, and says what
 * the contract objected to. A revert (or a gas-ceiling refusal) is final for the permit; anything else is retried.
 */
export function revertReason(err: unknown, abi: Abi): string | undefined {
  const refused = gasCeilingRefusal(err); // refused for its gas before signing: as final as a revert
  if (refused) return refused;
  if (!(err instanceof BaseError)) return undefined;
  const reverted = err.walk(
    (e) =>
      e instanceof ContractFunctionRevertedError ||
      e instanceof ContractFunctionZeroDataError ||
      /execution reverted|revert/i.test((e as Error).message ?? ''),
  );
  if (!reverted) return undefined;
  if (reverted instanceof ContractFunctionRevertedError && reverted.data?.errorName) {
    return describe(reverted.data.errorName, reverted.data.args);
  }
  if (reverted instanceof ContractFunctionZeroDataError) return 'the contract returned no data (function not implemented)';
  // Raw JSON-RPC errors carry the revert data as hex on some error in the chain.
  let data: Hex | undefined;
  err.walk((e) => {
    const d = (e as { data?: unknown }).data;
    const hex = typeof d === 'string' ? d : typeof (d as { data?: unknown })?.data === 'string' ? (d as { data: string }).data : undefined;
    if (hex && /^0x[0-9a-fA-F]{8,}$/.test(hex)) data = hex as Hex;
    return false;
  });
  if (data) {
    try {
      const decoded = decodeErrorResult({ abi, data });
      return describe(decoded.errorName, decoded.args as readonly unknown[] | undefined);
    } catch {
      return `execution reverted (data ${data.slice(0, 10)})`;
    }
  }
  return (reverted as BaseError).shortMessage ?? (reverted as Error).message.split('\n')[0];
}

/** A custom error as `Name(args)`; a revert string (`Error(string)`, as USDC's FiatToken reverts) as the string itself. */
function describe(name: string, args: readonly unknown[] | undefined): string {
  if (name === 'Error' && args?.length === 1 && typeof args[0] === 'string') return args[0];
  const shown = (args ?? []).map((a) => (typeof a === 'bigint' ? a.toString() : String(a)));
  return `${name}(${shown.join(', ')})`;
}
