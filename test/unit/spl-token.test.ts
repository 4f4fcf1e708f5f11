import * as spl from '@solana/spl-token';
import { Keypair, PublicKey } from '@solana/web3.js';
import * as ours from '../../src/chains/solana/spl-token';

// Our SPL facts must equal @solana/spl-token's (a dev dependency only: its bigint-buffer has CVE-2025-3194).
describe('src/chains/solana/spl-token against @solana/spl-token', () => {
  const mint = Keypair.generate().publicKey;
  const owner = Keypair.generate().publicKey;

  it('has the same program ids and sizes', () => {
    expect(ours.TOKEN_PROGRAM_ID.equals(spl.TOKEN_PROGRAM_ID)).toBe(true);
    expect(ours.TOKEN_2022_PROGRAM_ID.equals(spl.TOKEN_2022_PROGRAM_ID)).toBe(true);
    expect(ours.ASSOCIATED_TOKEN_PROGRAM_ID.equals(spl.ASSOCIATED_TOKEN_PROGRAM_ID)).toBe(true);
    expect([ours.ACCOUNT_SIZE, ours.MINT_SIZE]).toEqual([spl.ACCOUNT_SIZE, spl.MINT_SIZE]);
  });

  it.each([
    ['Token', spl.TOKEN_PROGRAM_ID],
    ['Token-2022', spl.TOKEN_2022_PROGRAM_ID],
  ])('derives the same associated token address (%s), also for an off-curve owner', (_name, program) => {
    const pda = PublicKey.findProgramAddressSync([Buffer.from('vault')], spl.TOKEN_PROGRAM_ID)[0];
    for (const o of [owner, pda]) {
      expect(ours.associatedTokenAddress(mint, o, program).toBase58()).toBe(
        spl.getAssociatedTokenAddressSync(mint, o, true, program).toBase58(),
      );
    }
  });

  it('decodes a token account as spl-token encodes it', () => {
    const data = Buffer.alloc(spl.ACCOUNT_SIZE + 10); // Token-2022 accounts carry extensions after the base layout
    spl.AccountLayout.encode(
      {
        mint,
        owner,
        amount: 18_446_744_073_709_551_615n,
        delegateOption: 0,
        delegate: PublicKey.default,
        state: spl.AccountState.Initialized,
        isNativeOption: 0,
        isNative: 0n,
        delegatedAmount: 0n,
        closeAuthorityOption: 0,
        closeAuthority: PublicKey.default,
      },
      data,
    );
    const got = ours.decodeTokenAccount(data);
    expect([got.mint.toBase58(), got.owner.toBase58(), got.amount]).toEqual([
      mint.toBase58(),
      owner.toBase58(),
      18_446_744_073_709_551_615n,
    ]);
  });

  it.each([true, false])('decodes a mint as spl-token encodes it (initialized %s)', (isInitialized) => {
    const data = Buffer.alloc(spl.MINT_SIZE);
    spl.MintLayout.encode(
      {
        mintAuthorityOption: 1,
        mintAuthority: owner,
        supply: 5n,
        decimals: 6,
        isInitialized,
        freezeAuthorityOption: 0,
        freezeAuthority: PublicKey.default,
      },
      data,
    );
    expect(ours.decodeMint(data)).toEqual({ decimals: 6, isInitialized });
  });

  it('refuses data shorter than the layout', () => {
    expect(() => ours.decodeTokenAccount(new Uint8Array(100))).toThrow('a token account is 165 bytes, got 100');
    expect(() => ours.decodeMint(new Uint8Array(10))).toThrow('a mint is 82 bytes, got 10');
  });
});
