/**
 * Workflow ids are business keys (DESIGN §1): every duplicate of one payment collapses onto one
 * execution. Hex parts are lower-cased so that checksum and lower-case spellings are the same key.
 */
export const settleWorkflowId = (network: string, payer: string, nonce: string) =>
  `settle:${network}:${payer.toLowerCase()}:${nonce.toLowerCase()}`;

/** Business key of one relayer transaction that a workflow sends (its write-ahead record id). */
export const relayerTxId = (workflowId: string, purpose: string) => `${workflowId}:${purpose}`;
