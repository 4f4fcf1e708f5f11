/**
 * Workflow ids are business keys (DESIGN §1): every duplicate of one payment collapses onto one
 * execution. Hex parts are lower-cased so that checksum and lower-case spellings are the same key.
 */
export const settleWorkflowId = (network: string, payer: string, nonce: string) =>
  `settle:${network}:${payer.toLowerCase()}:${nonce.toLowerCase()}`;

/**
 * A Permit2 payment: `settle:<network>:<owner>:<permit2 nonce>` (the nonce in decimal, as signed;
 * EIP-3009 nonces are 0x-hex, so the two kinds never share an id).
 */
export const permit2SettleWorkflowId = (network: string, owner: string, nonce: string) =>
  `settle:${network}:${owner.toLowerCase()}:${nonce.toLowerCase()}`;

/** Business key of one relayer transaction that a workflow sends (its write-ahead record id). */
export const relayerTxId = (workflowId: string, purpose: string) => `${workflowId}:${purpose}`;

/**
 * `permit:<network>:<token>:<owner>:<sighash>`, sighash = keccak256 of the normalised 65-byte
 * signature r || s || v (v 27/28), so the v/r/s and `signature` spellings are one permit.
 */
export const permitWorkflowId = (network: string, token: string, owner: string, sighash: string) =>
  `permit:${network}:${token.toLowerCase()}:${owner.toLowerCase()}:${sighash.toLowerCase()}`;

/**
 * `bridge:<sourceNetwork>:<sourceDomain>:<sourceTx>`: one bridge leg per burn transaction (a CCTP V2
 * message has no nonce until it is attested, and each of our burn transactions emits one message).
 */
export const bridgeWorkflowId = (sourceNetwork: string, sourceDomain: number, sourceTx: string) =>
  `bridge:${sourceNetwork}:${sourceDomain}:${sourceTx.toLowerCase()}`;
/**
 * Solana settlement: `settle:<network>:<payer>:<payer signature>`. The payer's signature over the
 * transaction message identifies the payment (ours as fee payer is added later). Base58 is
 * case-sensitive, so these parts keep their exact spelling.
 */
export const solanaSettleWorkflowId = (network: string, payer: string, payerSignature: string) =>
  `settle:${network}:${payer}:${payerSignature}`;
/** `topup:<merchant>:<payer>:<nonce>` (merchant ids are lower-case already). */
export const topupWorkflowId = (merchant: string, payer: string, nonce: string) =>
  `topup:${merchant}:${payer.toLowerCase()}:${nonce.toLowerCase()}`;
/** `withdrawal:<network>:<depositor>:<key>`: one gateway-wallet withdrawal per caller-chosen key. */
export const withdrawalWorkflowId = (network: string, depositor: string, key: string) =>
  `withdrawal:${network}:${depositor.toLowerCase()}:${key}`;

/** `batched:<network>:<payer>:<nonce>`: one batched nanopayment (its nonce is in the gateway wallet's domain). */
export const batchedWorkflowId = (network: string, payer: string, nonce: string) =>
  `batched:${network}:${payer.toLowerCase()}:${nonce.toLowerCase()}`;
