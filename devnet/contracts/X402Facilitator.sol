// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.24;

/// @dev The slice of an EIP-3009 token the facilitator uses.
interface ITransferWithAuthorization {
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) external;
}

/// @dev The slice of an EIP-2612 token the facilitator uses.
interface IPermitToken {
    function permit(
        address owner,
        address spender,
        uint256 value,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;
}

/// @title X402Facilitator
/// @notice Settles x402 payments on behalf of the facilitator service.
///         `settle` pulls an EIP-3009 `TransferWithAuthorization` (the typed data x402 buyers sign)
///         whose payee is this contract and
///         splits it between the payout address and the platform fee recipient in the same
///         transaction. `transferWithPermit` moves tokens with an EIP-2612 permit.
///         Only allow-listed relayers may call either: the payout and fee arguments are not covered
///         by the payer's signature, so an open entry point would let anyone redirect the funds.
contract X402Facilitator {
    error NotOwner(address caller);
    error NotRelayer(address caller);
    error ZeroAddress();
    error FeeExceedsValue(uint256 fee, uint256 value);
    error TokenCallFailed(address token);
    error Reentrancy();

    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);
    event RelayerSet(address indexed relayer, bool allowed);
    event Settled(
        address indexed token,
        address indexed from,
        bytes32 indexed nonce,
        address payout,
        uint256 value,
        uint256 fee
    );
    event PermitTransfer(address indexed token, address indexed owner, address indexed recipient, uint256 value);

    address public owner;
    mapping(address => bool) private _relayers;
    uint256 private _lock = 1;

    constructor(address owner_) {
        if (owner_ == address(0)) revert ZeroAddress();
        owner = owner_;
        emit OwnershipTransferred(address(0), owner_);
    }

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        _;
    }

    modifier onlyRelayer() {
        if (!_relayers[msg.sender]) revert NotRelayer(msg.sender);
        if (_lock != 1) revert Reentrancy();
        _lock = 2;
        _;
        _lock = 1;
    }

    function transferOwnership(address newOwner) external onlyOwner {
        if (newOwner == address(0)) revert ZeroAddress();
        emit OwnershipTransferred(owner, newOwner);
        owner = newOwner;
    }

    function setRelayer(address relayer, bool allowed) external onlyOwner {
        if (relayer == address(0)) revert ZeroAddress();
        _relayers[relayer] = allowed;
        emit RelayerSet(relayer, allowed);
    }

    function isRelayer(address account) external view returns (bool) {
        return _relayers[account];
    }

    /// @notice Pulls `value` from `from` with an EIP-3009 TransferWithAuthorization (payee: this
    ///         contract), then pays `value - fee` to `payout` and `fee` to `feeRecipient`.
    ///         x402 clients sign TransferWithAuthorization, not ReceiveWithAuthorization, so anyone
    ///         could submit it first; the funds would then sit in this contract and our settle
    ///         reverts (the service reports invalid_transaction_state and never pays out twice).
    function settle(
        address token,
        address from,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature,
        address payout,
        uint256 fee,
        address feeRecipient
    ) external onlyRelayer {
        if (payout == address(0)) revert ZeroAddress();
        if (fee > value) revert FeeExceedsValue(fee, value);
        if (fee != 0 && feeRecipient == address(0)) revert ZeroAddress();

        ITransferWithAuthorization(token).transferWithAuthorization(
            from, address(this), value, validAfter, validBefore, nonce, signature
        );

        unchecked {
            _pay(token, payout, value - fee);
        }
        if (fee != 0) _pay(token, feeRecipient, fee);

        emit Settled(token, from, nonce, payout, value, fee);
    }

    /// @notice What a settlement pays out of the amount it moved: `fee` to `feeRecipient` (the
    ///         facilitator's fee), `platformFee` to `platform` (a marketplace's cut: the spec's
    ///         `extra.platform` / `extra.platformFeeBps`) and the rest to `payout`.
    struct Payout {
        address payout;
        uint256 fee;
        address feeRecipient;
        uint256 platformFee;
        address platform;
    }

    event PlatformFeePaid(address indexed token, address indexed platform, uint256 amount);

    /// @notice `settle` with a marketplace's cut paid in the same transaction (see `Payout`).
    function settleSplit(
        address token,
        address from,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature,
        Payout calldata out
    ) external onlyRelayer {
        _checkPayout(value, out);
        ITransferWithAuthorization(token).transferWithAuthorization(
            from, address(this), value, validAfter, validBefore, nonce, signature
        );
        _payOut(token, value, out);
        emit Settled(token, from, nonce, out.payout, value, out.fee);
    }

    /// @dev Refuses before any token moves: fees above the amount, or a fee with nowhere to go.
    function _checkPayout(uint256 amount, Payout calldata out) private pure {
        if (out.payout == address(0)) revert ZeroAddress();
        if (out.fee > amount) revert FeeExceedsValue(out.fee, amount);
        if (out.platformFee > amount - out.fee) revert FeeExceedsValue(out.platformFee, amount - out.fee);
        if (out.fee != 0 && out.feeRecipient == address(0)) revert ZeroAddress();
        if (out.platformFee != 0 && out.platform == address(0)) revert ZeroAddress();
    }

    function _payOut(address token, uint256 amount, Payout calldata out) private {
        unchecked {
            _pay(token, out.payout, amount - out.fee - out.platformFee);
        }
        if (out.fee != 0) _pay(token, out.feeRecipient, out.fee);
        if (out.platformFee != 0) {
            _pay(token, out.platform, out.platformFee);
            emit PlatformFeePaid(token, out.platform, out.platformFee);
        }
    }

    /// @notice Applies an EIP-2612 permit granting this contract `value`, then moves `value` from
    ///         `owner_` to `recipient`. The permit must succeed: a pre-existing allowance is never
    ///         spent without a fresh signature.
    function transferWithPermit(
        address token,
        address owner_,
        address recipient,
        uint256 value,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external onlyRelayer {
        if (recipient == address(0)) revert ZeroAddress();
        IPermitToken(token).permit(owner_, address(this), value, deadline, v, r, s);
        _call(token, abi.encodeWithSignature("transferFrom(address,address,uint256)", owner_, recipient, value));
        emit PermitTransfer(token, owner_, recipient, value);
    }

    function _pay(address token, address to, uint256 amount) private {
        if (amount == 0) return;
        _call(token, abi.encodeWithSignature("transfer(address,uint256)", to, amount));
    }

    /// @dev Calls an ERC-20 and accepts either no return data or an ABI-encoded `true`; bubbles up
    ///      the token's revert data so callers see the token's own error.
    function _call(address token, bytes memory data) private {
        if (token.code.length == 0) revert TokenCallFailed(token);
        (bool ok, bytes memory ret) = token.call(data);
        if (!ok) {
            assembly ("memory-safe") {
                revert(add(ret, 32), mload(ret))
            }
        }
        if (ret.length != 0 && (ret.length < 32 || abi.decode(ret, (uint256)) != 1)) revert TokenCallFailed(token);
    }

    // ─────────────────────────────────────────────────────────────────────────────────────────────
    // Permit2 settlement (x402 `exact` and `upto` through our Permit2 proxies)
    //
    // The buyer signs a Permit2 PermitWitnessTransferFrom with the exact or upto proxy as spender and
    // this contract as `witness.to` (and, for upto, `witness.facilitator`). A relayer calls one of
    // the functions below: the proxy pulls the payment into this contract, which then pays
    // `fee` to `feeRecipient`, `platformFee` to `platform` and the rest to `payout` in the same transaction, as `settleSplit`
    // does for EIP-3009. The witness is built here from `address(this)`, so a relayer cannot send the
    // funds elsewhere; the proxy is an argument (no storage, no constructor change), and the payout is
    // made only from what this call actually received, so a wrong proxy can never pay out funds the
    // contract already holds.
    // ─────────────────────────────────────────────────────────────────────────────────────────────

    error Permit2AmountNotReceived(uint256 expected, uint256 received);

    event Permit2Settled(
        address indexed token,
        address indexed owner,
        uint256 indexed nonce,
        address proxy,
        address payout,
        uint256 amount,
        uint256 fee
    );

    /// @notice A buyer's Permit2 witness transfer as signed: spender `proxy`, `amount` the signed
    ///         (for upto: maximum) amount, `validAfter` the witness field.
    struct Permit2Payment {
        address proxy;
        address token;
        uint256 amount;
        uint256 nonce;
        uint256 deadline;
        address owner;
        uint256 validAfter;
        bytes signature;
    }

    /// @notice The token's EIP-2612 permit granting Permit2 an allowance; `value == 0` means none.
    struct Permit2612 {
        uint256 value;
        uint256 deadline;
        uint8 v;
        bytes32 r;
        bytes32 s;
    }

    /// @dev The proxies' argument types (Permit2.PermitTransferFrom and the witnesses), declared
    ///      here so this contract needs no import.
    struct P2TokenPermissions {
        address token;
        uint256 amount;
    }
    struct P2PermitTransferFrom {
        P2TokenPermissions permitted;
        uint256 nonce;
        uint256 deadline;
    }
    struct P2ExactWitness {
        address to;
        uint256 validAfter;
    }
    struct P2UptoWitness {
        address to;
        address facilitator;
        uint256 validAfter;
    }

    /// @notice Settles an x402 `exact` Permit2 payment (the full signed amount) through `p.proxy`.
    function settlePermit2Exact(Permit2Payment calldata p, Permit2612 calldata permit2612, Payout calldata out)
        external
        onlyRelayer
    {
        bytes memory call = abi.encodeWithSignature(
            "settle(((address,uint256),uint256,uint256),address,(address,uint256),bytes)",
            _p2Permit(p),
            p.owner,
            P2ExactWitness(address(this), p.validAfter),
            p.signature
        );
        _settlePermit2(p, p.amount, call, permit2612, out);
    }

    /// @notice Settles `settleAmount` (0 < settleAmount <= the signed maximum) of an x402 `upto`
    ///         Permit2 payment through `p.proxy`.
    function settlePermit2Upto(
        Permit2Payment calldata p,
        uint256 settleAmount,
        Permit2612 calldata permit2612,
        Payout calldata out
    ) external onlyRelayer {
        bytes memory call = abi.encodeWithSignature(
            "settle(((address,uint256),uint256,uint256),uint256,address,(address,address,uint256),bytes)",
            _p2Permit(p),
            settleAmount,
            p.owner,
            P2UptoWitness(address(this), address(this), p.validAfter),
            p.signature
        );
        _settlePermit2(p, settleAmount, call, permit2612, out);
    }

    function _p2Permit(Permit2Payment calldata p) private pure returns (P2PermitTransferFrom memory) {
        return P2PermitTransferFrom(P2TokenPermissions(p.token, p.amount), p.nonce, p.deadline);
    }

    function _settlePermit2(
        Permit2Payment calldata p,
        uint256 amount,
        bytes memory proxyCall,
        Permit2612 calldata permit2612,
        Payout calldata out
    ) private {
        if (p.proxy == address(0)) revert ZeroAddress();
        _checkPayout(amount, out);
        if (permit2612.value != 0) _applyPermit2612(p, amount, permit2612);

        uint256 before = _balanceOfThis(p.token);
        (bool ok, bytes memory ret) = p.proxy.call(proxyCall);
        if (!ok) {
            assembly ("memory-safe") {
                revert(add(ret, 32), mload(ret))
            }
        }
        uint256 received = _balanceOfThis(p.token) - before;
        if (received != amount) revert Permit2AmountNotReceived(amount, received);

        _payOut(p.token, amount, out);
        emit Permit2Settled(p.token, p.owner, p.nonce, p.proxy, out.payout, amount, out.fee);
    }

    /// @dev Applies the owner's EIP-2612 permit for Permit2 unless Permit2 already has the allowance
    ///      (a repeat or a front-run permit). A failing permit is ignored: without the allowance the
    ///      transfer itself reverts with the token's own error.
    function _applyPermit2612(Permit2Payment calldata p, uint256 amount, Permit2612 calldata e) private {
        (bool ok, bytes memory ret) = p.proxy.staticcall(abi.encodeWithSignature("PERMIT2()"));
        if (!ok || ret.length < 32) return;
        address permit2 = abi.decode(ret, (address));
        (ok, ret) = p.token.staticcall(abi.encodeWithSignature("allowance(address,address)", p.owner, permit2));
        if (ok && ret.length >= 32 && abi.decode(ret, (uint256)) >= amount) return;
        (ok, ) = p.token.call(
            abi.encodeWithSignature(
                "permit(address,address,uint256,uint256,uint8,bytes32,bytes32)", p.owner, permit2, e.value, e.deadline, e.v, e.r, e.s
            )
        );
        ok; // deliberately ignored, see above
    }

    function _balanceOfThis(address token) private view returns (uint256) {
        if (token.code.length == 0) revert TokenCallFailed(token);
        (bool ok, bytes memory ret) = token.staticcall(abi.encodeWithSignature("balanceOf(address)", address(this)));
        if (!ok || ret.length < 32) revert TokenCallFailed(token);
        return abi.decode(ret, (uint256));
    }
    // --------------------------------------------------------------------------------------------
    // Cross-chain EIP-3009 settlement (CCTP-style bridge). Added after the functions above; the
    // contract's storage is unchanged (the devnet may place this code over an older deployment).
    // --------------------------------------------------------------------------------------------

    event BridgeBurned(address indexed token, address indexed from, bytes32 indexed nonce, uint32 destinationDomain, uint256 value);
    /// @dev `bridgeNonce` is the CCTP V2 message nonce (assigned by the attestation service).
    event BridgePayout(
        address indexed token,
        uint32 indexed sourceDomain,
        bytes32 indexed bridgeNonce,
        address payout,
        uint256 received,
        uint256 fee
    );

    /// @notice Where a cross-chain settlement goes: burn through `messenger` (a CCTP V2
    ///         TokenMessenger) toward `destinationDomain`, minted to `mintRecipient` (the
    ///         destination's facilitator) and deliverable only by `destinationCaller`; at most
    ///         `maxFee` goes to the bridge; attested at `minFinalityThreshold` (2000: finalized).
    struct BridgeRoute {
        address messenger;
        uint32 destinationDomain;
        address mintRecipient;
        address destinationCaller;
        uint256 maxFee;
        uint32 minFinalityThreshold;
    }

    /// @notice Pulls `value` from `from` with an EIP-3009 TransferWithAuthorization (payee: this
    ///         contract) and burns all of it along `route`. One transaction: the authorization is
    ///         never used without the burn.
    function settleAndBurn(
        address token,
        address from,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature,
        BridgeRoute calldata route
    ) external onlyRelayer {
        if (route.messenger == address(0) || route.mintRecipient == address(0)) revert ZeroAddress();
        ITransferWithAuthorization(token).transferWithAuthorization(
            from, address(this), value, validAfter, validBefore, nonce, signature
        );
        _burn(token, value, route);
        emit BridgeBurned(token, from, nonce, route.destinationDomain, value);
    }

    function _burn(address token, uint256 value, BridgeRoute calldata route) private {
        _call(token, abi.encodeWithSignature("approve(address,uint256)", route.messenger, value));
        ITokenMessengerV2(route.messenger).depositForBurn(
            value,
            route.destinationDomain,
            bytes32(uint256(uint160(route.mintRecipient))),
            token,
            bytes32(uint256(uint160(route.destinationCaller))),
            route.maxFee,
            route.minFinalityThreshold
        );
    }

    /// @notice Delivers an attested burn message through `transmitter` (which mints to this
    ///         contract) and pays what arrived: `received - fee` to `payout`, `fee` (capped at
    ///         `received`) to `feeRecipient`. Minting and payout are one transaction, and the
    ///         transmitter accepts each message once, so a payout can never happen twice.
    function receiveAndPayout(
        address transmitter,
        bytes calldata message,
        bytes calldata attestation,
        address token,
        address payout,
        uint256 fee,
        address feeRecipient
    ) external onlyRelayer {
        if (payout == address(0)) revert ZeroAddress();
        if (fee != 0 && feeRecipient == address(0)) revert ZeroAddress();
        uint256 before = IBalanceOf(token).balanceOf(address(this));
        IMessageTransmitterV2(transmitter).receiveMessage(message, attestation);
        uint256 received = IBalanceOf(token).balanceOf(address(this)) - before;
        if (fee > received) fee = received;
        unchecked {
            _pay(token, payout, received - fee);
        }
        if (fee != 0) _pay(token, feeRecipient, fee);
        // CCTP V2 header: sourceDomain at bytes 4-8, nonce at 12-44 (the transmitter checked the length).
        emit BridgePayout(token, uint32(bytes4(message[4:8])), bytes32(message[12:44]), payout, received, fee);
    }
}

/// @dev The slices of CCTP V2 (TokenMessengerV2, MessageTransmitterV2) and the token that the
///      cross-chain section uses.
interface ITokenMessengerV2 {
    function depositForBurn(
        uint256 amount,
        uint32 destinationDomain,
        bytes32 mintRecipient,
        address burnToken,
        bytes32 destinationCaller,
        uint256 maxFee,
        uint32 minFinalityThreshold
    ) external;
}

interface IMessageTransmitterV2 {
    function receiveMessage(bytes calldata message, bytes calldata attestation) external returns (bool);
}

interface IBalanceOf {
    function balanceOf(address account) external view returns (uint256);
}
