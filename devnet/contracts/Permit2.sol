// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.24;

/// @dev The slice of an ERC-20 token Permit2 uses.
interface IERC20TransferFrom {
    function transferFrom(address from, address to, uint256 value) external returns (bool);
}

/// @title Permit2 (devnet)
/// @notice Our own implementation of the SignatureTransfer half of Uniswap's Permit2 interface, with
///         the same function signatures, EIP-712 domain ({name: "Permit2", chainId,
///         verifyingContract}, no version), type hashes, unordered-nonce bitmap and error names, so
///         x402 buyers sign exactly what they would sign for the canonical Permit2.
///         The owner approves this contract on the token once; every transfer then needs a fresh
///         signature naming `msg.sender` as spender. Signatures are 65-byte ECDSA with low `s` only
///         (no 64-byte compact form), or, for an owner with code, whatever its EIP-1271
///         `isValidSignature` accepts.
/// @dev No constructor and no address-dependent immutables: the domain separator is computed from
///      `address(this)` on every call, so the devnet deploy may place this runtime code at the
///      configured address with `anvil_setCode`.
contract Permit2 {
    struct TokenPermissions {
        address token;
        uint256 amount;
    }

    struct PermitTransferFrom {
        TokenPermissions permitted;
        uint256 nonce;
        uint256 deadline;
    }

    struct SignatureTransferDetails {
        address to;
        uint256 requestedAmount;
    }

    /// @notice The permit's deadline has passed.
    error SignatureExpired(uint256 signatureDeadline);
    /// @notice The requested amount exceeds the permitted amount.
    error InvalidAmount(uint256 maxAmount);
    /// @notice The nonce was already used or invalidated.
    error InvalidNonce();
    /// @notice The signature is not 65 bytes long.
    error InvalidSignatureLength();
    /// @notice Malformed signature: high `s`, bad `v`, or no recoverable signer.
    error InvalidSignature();
    /// @notice `owner` is a contract and its EIP-1271 `isValidSignature` did not accept the signature.
    error InvalidContractSignature();
    /// @notice The signature was made by someone other than `owner`.
    error InvalidSigner();
    /// @notice The token's transferFrom reverted, returned false, or the token has no code.
    error TransferFailed(address token);

    event UnorderedNonceInvalidation(address indexed owner, uint256 word, uint256 mask);

    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,uint256 chainId,address verifyingContract)");
    bytes32 private constant NAME_HASH = keccak256("Permit2");

    bytes32 public constant TOKEN_PERMISSIONS_TYPEHASH = keccak256("TokenPermissions(address token,uint256 amount)");
    bytes32 public constant PERMIT_TRANSFER_FROM_TYPEHASH = keccak256(
        "PermitTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline)TokenPermissions(address token,uint256 amount)"
    );
    /// @dev The fixed head of the witness type; the caller's `witnessTypeString` completes it, e.g.
    ///      "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,uint256 validAfter)".
    string public constant PERMIT_WITNESS_TRANSFER_FROM_STUB =
        "PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,";

    /// @dev secp256k1n / 2: signatures with a larger `s` are malleable twins and are rejected.
    uint256 private constant MAX_S = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    /// @notice owner => word position (nonce >> 8) => bitmap of used nonces (bit nonce & 255).
    mapping(address => mapping(uint256 => uint256)) public nonceBitmap;

    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, block.chainid, address(this)));
    }

    /// @notice Transfers `transferDetails.requestedAmount` of the permitted token from `owner` to
    ///         `transferDetails.to`, authorized by `owner`'s signature over a PermitTransferFrom
    ///         with `msg.sender` as spender.
    function permitTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes calldata signature
    ) external {
        bytes32 structHash = keccak256(
            abi.encode(PERMIT_TRANSFER_FROM_TYPEHASH, _hashTokenPermissions(permit.permitted), msg.sender, permit.nonce, permit.deadline)
        );
        _transfer(permit, transferDetails, owner, structHash, signature);
    }

    /// @notice As `permitTransferFrom`, but the signed struct is a PermitWitnessTransferFrom that
    ///         also binds `witness` (the EIP-712 hash of the caller's witness struct), whose type
    ///         is described by `witnessTypeString`.
    function permitWitnessTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 witness,
        string calldata witnessTypeString,
        bytes calldata signature
    ) external {
        bytes32 typeHash = keccak256(abi.encodePacked(PERMIT_WITNESS_TRANSFER_FROM_STUB, witnessTypeString));
        bytes32 structHash = keccak256(
            abi.encode(typeHash, _hashTokenPermissions(permit.permitted), msg.sender, permit.nonce, permit.deadline, witness)
        );
        _transfer(permit, transferDetails, owner, structHash, signature);
    }

    /// @notice Marks the nonces whose bits are set in `mask` in word `wordPos` as used for the
    ///         caller, so signatures carrying them can no longer be spent.
    function invalidateUnorderedNonces(uint256 wordPos, uint256 mask) external {
        nonceBitmap[msg.sender][wordPos] |= mask;
        emit UnorderedNonceInvalidation(msg.sender, wordPos, mask);
    }

    function _transfer(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 structHash,
        bytes calldata signature
    ) private {
        if (block.timestamp > permit.deadline) revert SignatureExpired(permit.deadline);
        if (transferDetails.requestedAmount > permit.permitted.amount) revert InvalidAmount(permit.permitted.amount);

        _useUnorderedNonce(owner, permit.nonce);
        _verify(keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash)), owner, signature);
        _transferFrom(permit.permitted.token, owner, transferDetails.to, transferDetails.requestedAmount);
    }

    function _hashTokenPermissions(TokenPermissions calldata permitted) private pure returns (bytes32) {
        return keccak256(abi.encode(TOKEN_PERMISSIONS_TYPEHASH, permitted.token, permitted.amount));
    }

    function _useUnorderedNonce(address owner, uint256 nonce) private {
        uint256 bit = 1 << (nonce & 255);
        uint256 word = nonceBitmap[owner][nonce >> 8];
        if (word & bit != 0) revert InvalidNonce();
        nonceBitmap[owner][nonce >> 8] = word | bit;
    }

    /// @dev A contract owner (a smart wallet) is asked with EIP-1271 `isValidSignature`, as Uniswap's
    ///      SignatureVerification does; an account without code must give a 65-byte low-s ECDSA signature.
    function _verify(bytes32 digest, address owner, bytes calldata signature) private view {
        if (owner.code.length > 0) {
            (bool ok, bytes memory ret) =
                owner.staticcall(abi.encodeWithSignature("isValidSignature(bytes32,bytes)", digest, signature));
            if (!ok || ret.length < 32 || abi.decode(ret, (bytes4)) != 0x1626ba7e) revert InvalidContractSignature();
            return;
        }
        if (signature.length != 65) revert InvalidSignatureLength();
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (uint256(s) > MAX_S || (v != 27 && v != 28)) revert InvalidSignature();
        address signer = ecrecover(digest, v, r, s);
        if (signer == address(0)) revert InvalidSignature();
        if (signer != owner) revert InvalidSigner();
    }

    function _transferFrom(address token, address from, address to, uint256 amount) private {
        if (token.code.length == 0) revert TransferFailed(token);
        (bool ok, bytes memory data) =
            token.call(abi.encodeCall(IERC20TransferFrom.transferFrom, (from, to, amount)));
        if (!ok) {
            // Bubble up the token's revert data (e.g. InsufficientAllowance) so callers see why.
            if (data.length > 0) {
                assembly {
                    revert(add(data, 32), mload(data))
                }
            }
            revert TransferFailed(token);
        }
        if (data.length > 0 && (data.length != 32 || abi.decode(data, (uint256)) != 1)) revert TransferFailed(token);
    }
}
