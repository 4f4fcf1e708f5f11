// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.24;

/// @dev The slice of the devnet USDC the bridge uses (burn own balance, mint as a configured minter).
interface IBridgeToken {
    function transferFrom(address from, address to, uint256 value) external returns (bool);
    function burn(uint256 amount) external;
    function mint(address to, uint256 amount) external;
}

/// @title Bridge message format (devnet, our own)
/// @notice One burn message, ABI-encoded as a flat tuple so off-chain code decodes it with a plain
///         ABI decoder:
///         (uint32 version, uint32 sourceDomain, uint32 destinationDomain, uint64 nonce,
///          address sender, address burnToken, address mintRecipient, address destinationCaller,
///          uint256 amount, uint256 maxFee, address depositor)
///         `sender` is the messenger that emitted it; `destinationCaller` (zero = anyone) is the only
///         account allowed to deliver it on the destination, as in CCTP.
library BridgeMessage {
    uint32 internal constant VERSION = 1;

    struct Burn {
        uint32 version;
        uint32 sourceDomain;
        uint32 destinationDomain;
        uint64 nonce;
        address sender;
        address burnToken;
        address mintRecipient;
        address destinationCaller;
        uint256 amount;
        uint256 maxFee;
        address depositor;
    }

    /// @dev A struct of static fields encodes exactly as the flat tuple above.
    function encode(Burn memory m) internal pure returns (bytes memory) {
        return abi.encode(m);
    }

    function decode(bytes calldata data) internal pure returns (Burn memory) {
        return abi.decode(data, (Burn));
    }
}

/// @title BridgeTokenMessenger
/// @notice Source side of the devnet's CCTP-style bridge: takes USDC from the caller, burns it and
///         emits a message that the attester signs and the destination's transmitter mints from.
///         Nonces are assigned here, one sequence per source domain.
contract BridgeTokenMessenger {
    error ZeroAmount();
    error ZeroAddress();
    error SameDomain(uint32 domain);
    error UnsupportedToken(address token);

    event MessageSent(bytes message);
    event DepositForBurn(
        uint64 indexed nonce,
        address indexed burnToken,
        address indexed depositor,
        uint256 amount,
        address mintRecipient,
        uint32 destinationDomain,
        uint256 maxFee
    );

    uint32 public immutable localDomain;
    address public immutable token;
    uint64 public nextNonce;

    constructor(uint32 localDomain_, address token_) {
        if (token_ == address(0)) revert ZeroAddress();
        localDomain = localDomain_;
        token = token_;
    }

    /// @notice Burns `amount` of the caller's `burnToken` (approved to this contract) toward
    ///         `destinationDomain`; at most `maxFee` of it may go to the bridge on the destination.
    function depositForBurn(
        uint256 amount,
        uint32 destinationDomain,
        address mintRecipient,
        address burnToken,
        address destinationCaller,
        uint256 maxFee
    ) external returns (uint64 nonce) {
        if (amount == 0) revert ZeroAmount();
        if (mintRecipient == address(0)) revert ZeroAddress();
        if (burnToken != token) revert UnsupportedToken(burnToken);
        if (destinationDomain == localDomain) revert SameDomain(destinationDomain);

        IBridgeToken(burnToken).transferFrom(msg.sender, address(this), amount);
        IBridgeToken(burnToken).burn(amount);

        nonce = nextNonce++;
        emit MessageSent(
            BridgeMessage.encode(
                BridgeMessage.Burn({
                    version: BridgeMessage.VERSION,
                    sourceDomain: localDomain,
                    destinationDomain: destinationDomain,
                    nonce: nonce,
                    sender: address(this),
                    burnToken: burnToken,
                    mintRecipient: mintRecipient,
                    destinationCaller: destinationCaller,
                    amount: amount,
                    maxFee: maxFee,
                    depositor: msg.sender
                })
            )
        );
        emit DepositForBurn(nonce, burnToken, msg.sender, amount, mintRecipient, destinationDomain, maxFee);
    }
}

/// @title BridgeMessageTransmitter
/// @notice Destination side: mints for a burn message signed by the configured attester, at most
///         once per (source domain, nonce). The bridge fee is `amount * feeBps / 10000` capped at the
///         message's `maxFee` (exact input: the recipient gets `amount - fee`).
contract BridgeMessageTransmitter {
    error NotOwner(address caller);
    error ZeroAddress();
    error BadVersion(uint32 version);
    error WrongDestination(uint32 domain);
    error UnknownSender(address sender);
    error InvalidAttestation();
    error NonceUsed(uint32 sourceDomain, uint64 nonce);
    error WrongCaller(address caller, address expected);
    error UnsupportedToken(address token);

    event MintAndWithdraw(
        uint32 indexed sourceDomain,
        uint64 indexed nonce,
        address indexed mintRecipient,
        uint256 amount,
        uint256 feeCollected
    );

    /// @dev secp256k1 group order divided by two; larger `s` values are malleable twins.
    uint256 private constant SECP256K1N_HALF = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    uint32 public immutable localDomain;
    address public immutable token;
    /// @notice The messenger contract trusted as `sender` on every remote domain (the devnet deploys
    ///         it at one address on every chain).
    address public immutable remoteMessenger;
    address public owner;
    address public attester;
    address public feeRecipient;
    uint16 public feeBps;

    mapping(bytes32 => bool) private _used;

    constructor(
        uint32 localDomain_,
        address token_,
        address remoteMessenger_,
        address attester_,
        address feeRecipient_,
        uint16 feeBps_
    ) {
        if (token_ == address(0) || remoteMessenger_ == address(0) || attester_ == address(0) || feeRecipient_ == address(0)) {
            revert ZeroAddress();
        }
        localDomain = localDomain_;
        token = token_;
        remoteMessenger = remoteMessenger_;
        attester = attester_;
        feeRecipient = feeRecipient_;
        feeBps = feeBps_;
        owner = msg.sender;
    }

    function setAttester(address attester_) external {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        if (attester_ == address(0)) revert ZeroAddress();
        attester = attester_;
    }

    /// @notice Whether the message (sourceDomain, nonce) was already delivered here.
    function usedNonces(uint32 sourceDomain, uint64 nonce) public view returns (bool) {
        return _used[keccak256(abi.encode(sourceDomain, nonce))];
    }

    /// @notice The fee this transmitter takes from a message of `amount` with `maxFee`.
    function feeFor(uint256 amount, uint256 maxFee) public view returns (uint256) {
        uint256 fee = (amount * feeBps) / 10_000;
        return fee > maxFee ? maxFee : fee;
    }

    /// @notice Verifies the attester's signature over keccak256(message), marks the nonce used and
    ///         mints `amount - fee` to the message's recipient and `fee` to `feeRecipient`.
    function receiveMessage(bytes calldata message, bytes calldata attestation) external returns (bool) {
        BridgeMessage.Burn memory m = BridgeMessage.decode(message);
        if (m.version != BridgeMessage.VERSION) revert BadVersion(m.version);
        if (m.destinationDomain != localDomain) revert WrongDestination(m.destinationDomain);
        if (m.sender != remoteMessenger) revert UnknownSender(m.sender);
        if (m.burnToken != token) revert UnsupportedToken(m.burnToken);
        if (m.destinationCaller != address(0) && msg.sender != m.destinationCaller) {
            revert WrongCaller(msg.sender, m.destinationCaller);
        }
        if (_recover(keccak256(message), attestation) != attester) revert InvalidAttestation();

        bytes32 key = keccak256(abi.encode(m.sourceDomain, m.nonce));
        if (_used[key]) revert NonceUsed(m.sourceDomain, m.nonce);
        _used[key] = true;

        uint256 fee = feeFor(m.amount, m.maxFee);
        IBridgeToken(token).mint(m.mintRecipient, m.amount - fee);
        if (fee != 0) IBridgeToken(token).mint(feeRecipient, fee);
        emit MintAndWithdraw(m.sourceDomain, m.nonce, m.mintRecipient, m.amount - fee, fee);
        return true;
    }

    function _recover(bytes32 digest, bytes calldata sig) private pure returns (address) {
        if (sig.length != 65) revert InvalidAttestation();
        bytes32 r = bytes32(sig[0:32]);
        bytes32 s = bytes32(sig[32:64]);
        uint8 v = uint8(sig[64]);
        if (v < 27) v += 27;
        if (uint256(s) > SECP256K1N_HALF || (v != 27 && v != 28)) revert InvalidAttestation();
        address signer = ecrecover(digest, v, r, s);
        if (signer == address(0)) revert InvalidAttestation();
        return signer;
    }
}
