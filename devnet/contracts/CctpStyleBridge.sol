// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.24;

/// @dev The slice of the devnet USDC the bridge uses (burn own balance, mint as a configured minter).
interface IBridgeToken {
    function transferFrom(address from, address to, uint256 value) external returns (bool);
    function burn(uint256 amount) external;
    function mint(address to, uint256 amount) external;
}

// CCTP V2 message format (devnet; written here from Circle's public CCTP V2 technical guide).
// A message is packed (not ABI-encoded): a 148-byte header, then the body, fields at byte offsets:
//   header: version uint32 0, sourceDomain uint32 4, destinationDomain uint32 8,
//           nonce bytes32 12 (zero on the source chain, assigned by the attestation service),
//           sender bytes32 44, recipient bytes32 76, destinationCaller bytes32 108,
//           minFinalityThreshold uint32 140, finalityThresholdExecuted uint32 144 (set by the
//           attestation service), messageBody 148;
//   burn body: version uint32 0, burnToken bytes32 4, mintRecipient bytes32 36, amount uint256 68,
//           messageSender bytes32 100, maxFee uint256 132, feeExecuted uint256 164 (set by the
//           attestation service), expirationBlock uint256 196, hookData 228.
// Both versions are 1 in CCTP V2.
library CctpMessageV2 {
    uint32 internal constant VERSION = 1;
    uint32 internal constant BODY_VERSION = 1;
    uint256 internal constant HEADER_LENGTH = 148;
    uint256 internal constant BODY_LENGTH = 228;

    function toBytes32(address a) internal pure returns (bytes32) {
        return bytes32(uint256(uint160(a)));
    }

    function toAddress(bytes32 b) internal pure returns (address) {
        return address(uint160(uint256(b)));
    }
}

interface IMessageTransmitterV2Send {
    function sendMessage(
        uint32 destinationDomain,
        bytes32 recipient,
        bytes32 destinationCaller,
        uint32 minFinalityThreshold,
        bytes calldata messageBody
    ) external;
}

/// @title BridgeTokenMessenger (TokenMessengerV2's interface)
/// @notice Source side: takes USDC from the caller, burns it and sends a burn message through the
///         local transmitter, which emits it for the attestation service.
contract BridgeTokenMessenger {
    error ZeroAmount();
    error ZeroAddress();
    error SameDomain(uint32 domain);
    error UnsupportedToken(address token);
    error FeeTooHigh(uint256 maxFee, uint256 amount);

    event DepositForBurn(
        address indexed burnToken,
        uint256 amount,
        address indexed depositor,
        bytes32 mintRecipient,
        uint32 destinationDomain,
        bytes32 destinationTokenMessenger,
        bytes32 destinationCaller,
        uint256 maxFee,
        uint32 indexed minFinalityThreshold,
        bytes hookData
    );

    uint32 public immutable localDomain;
    address public immutable token;
    address public immutable localMessageTransmitter;

    constructor(uint32 localDomain_, address token_, address localMessageTransmitter_) {
        if (token_ == address(0) || localMessageTransmitter_ == address(0)) revert ZeroAddress();
        localDomain = localDomain_;
        token = token_;
        localMessageTransmitter = localMessageTransmitter_;
    }

    /// @notice Burns `amount` of the caller's `burnToken` (approved to this contract) toward
    ///         `destinationDomain`; at most `maxFee` of it may go to the bridge on the destination.
    function depositForBurn(
        uint256 amount,
        uint32 destinationDomain,
        bytes32 mintRecipient,
        address burnToken,
        bytes32 destinationCaller,
        uint256 maxFee,
        uint32 minFinalityThreshold
    ) external {
        if (amount == 0) revert ZeroAmount();
        if (mintRecipient == bytes32(0)) revert ZeroAddress();
        if (burnToken != token) revert UnsupportedToken(burnToken);
        if (destinationDomain == localDomain) revert SameDomain(destinationDomain);
        if (maxFee >= amount) revert FeeTooHigh(maxFee, amount);

        IBridgeToken(burnToken).transferFrom(msg.sender, address(this), amount);
        IBridgeToken(burnToken).burn(amount);

        // The devnet deploys the messenger at one address on every chain: the remote one is this one.
        bytes32 self = CctpMessageV2.toBytes32(address(this));
        bytes memory body = abi.encodePacked(
            CctpMessageV2.BODY_VERSION,
            CctpMessageV2.toBytes32(burnToken),
            mintRecipient,
            amount,
            CctpMessageV2.toBytes32(msg.sender),
            maxFee,
            uint256(0), // feeExecuted
            uint256(0) // expirationBlock
        );
        IMessageTransmitterV2Send(localMessageTransmitter).sendMessage(
            destinationDomain, self, destinationCaller, minFinalityThreshold, body
        );
        emit DepositForBurn(
            burnToken, amount, msg.sender, mintRecipient, destinationDomain, self, destinationCaller, maxFee, minFinalityThreshold, ""
        );
    }
}

/// @title BridgeMessageTransmitter (MessageTransmitterV2's interface)
/// @notice Source side: emits the messages of the local messenger. Destination side: mints for a
///         burn message attested by `signatureThreshold` of the enabled attesters, at most once per
///         nonce. The bridge fee is the message's `feeExecuted` (set by the attestation service, at
///         most `maxFee`): the recipient gets `amount - feeExecuted`, the fee recipient `feeExecuted`.
/// @dev Attestation rules as Circle's Attestable (CCTP V1 and V2): the attestation is exactly
///      65 * signatureThreshold bytes of concatenated (r, s, v) signatures over keccak256(message),
///      their signers strictly increasing (so no signer counts twice), each an enabled attester.
contract BridgeMessageTransmitter {
    error NotOwner(address caller);
    error NotMessenger(address caller);
    error ZeroAddress();
    error BadMessage();
    error BadVersion(uint32 version);
    error WrongDestination(uint32 domain);
    error UnknownSender(bytes32 sender);
    error UnknownRecipient(bytes32 recipient);
    error InvalidAttestation();
    error InvalidAttestationLength(uint256 length, uint256 expected);
    error SignerOutOfOrder(address signer);
    error NotEnabledAttester(address signer);
    error BadThreshold(uint256 threshold, uint256 enabled);
    error AttesterState(address attester);
    error NonceUsed(bytes32 nonce);
    error WrongCaller(address caller, bytes32 expected);
    error UnsupportedToken(bytes32 token);
    error FeeTooHigh(uint256 feeExecuted, uint256 maxFee);

    event MessageSent(bytes message);
    event MessageReceived(
        address indexed caller,
        uint32 sourceDomain,
        bytes32 indexed nonce,
        bytes32 sender,
        uint32 indexed finalityThresholdExecuted,
        bytes messageBody
    );
    event MintAndWithdraw(address indexed mintRecipient, uint256 amount, address indexed mintToken, uint256 feeCollected);
    event AttesterEnabled(address attester);
    event AttesterDisabled(address attester);
    event SignatureThresholdUpdated(uint256 oldSignatureThreshold, uint256 newSignatureThreshold);

    /// @dev secp256k1 group order divided by two; larger `s` values are malleable twins.
    uint256 private constant SECP256K1N_HALF = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;
    uint256 private constant SIGNATURE_LENGTH = 65;
    uint256 private constant NONCE_USED = 1;

    uint32 public immutable localDomain;
    address public immutable token;
    /// @notice The messenger on this chain, and the one trusted as `sender` on every remote domain
    ///         (the devnet deploys it at one address on every chain).
    address public immutable messenger;
    address public owner;
    address public feeRecipient;
    /// @notice How many distinct enabled attesters must sign a message (m of m-of-n).
    uint256 public signatureThreshold;
    /// @notice How many attesters are enabled (n of m-of-n).
    uint256 public numEnabledAttesters;
    mapping(address => bool) public isEnabledAttester;

    /// @notice 1 once the message with this nonce was received here (CCTP V2's `usedNonces`).
    mapping(bytes32 => uint256) public usedNonces;

    constructor(
        uint32 localDomain_,
        address token_,
        address messenger_,
        address[] memory attesters_,
        uint256 signatureThreshold_,
        address feeRecipient_
    ) {
        if (token_ == address(0) || messenger_ == address(0) || feeRecipient_ == address(0)) revert ZeroAddress();
        localDomain = localDomain_;
        token = token_;
        messenger = messenger_;
        feeRecipient = feeRecipient_;
        owner = msg.sender;
        for (uint256 i = 0; i < attesters_.length; i++) _enable(attesters_[i]);
        _setThreshold(signatureThreshold_);
    }

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        _;
    }

    function enableAttester(address attester) external onlyOwner {
        _enable(attester);
    }

    /// @notice Disables an attester; never below the threshold.
    function disableAttester(address attester) external onlyOwner {
        if (!isEnabledAttester[attester]) revert AttesterState(attester);
        if (numEnabledAttesters <= signatureThreshold) revert BadThreshold(signatureThreshold, numEnabledAttesters - 1);
        isEnabledAttester[attester] = false;
        numEnabledAttesters--;
        emit AttesterDisabled(attester);
    }

    function setSignatureThreshold(uint256 threshold) external onlyOwner {
        _setThreshold(threshold);
    }

    function _enable(address attester) private {
        if (attester == address(0)) revert ZeroAddress();
        if (isEnabledAttester[attester]) revert AttesterState(attester);
        isEnabledAttester[attester] = true;
        numEnabledAttesters++;
        emit AttesterEnabled(attester);
    }

    function _setThreshold(uint256 threshold) private {
        if (threshold == 0 || threshold > numEnabledAttesters) revert BadThreshold(threshold, numEnabledAttesters);
        emit SignatureThresholdUpdated(signatureThreshold, threshold);
        signatureThreshold = threshold;
    }

    /// @notice Emits a message of the local messenger with an empty nonce and executed finality.
    function sendMessage(
        uint32 destinationDomain,
        bytes32 recipient,
        bytes32 destinationCaller,
        uint32 minFinalityThreshold,
        bytes calldata messageBody
    ) external {
        if (msg.sender != messenger) revert NotMessenger(msg.sender);
        emit MessageSent(
            abi.encodePacked(
                CctpMessageV2.VERSION,
                localDomain,
                destinationDomain,
                bytes32(0),
                CctpMessageV2.toBytes32(msg.sender),
                recipient,
                destinationCaller,
                minFinalityThreshold,
                uint32(0),
                messageBody
            )
        );
    }

    /// @notice Verifies the attestation over keccak256(message), marks the nonce used and mints
    ///         `amount - feeExecuted` to the message's recipient and the fee to `feeRecipient`.
    function receiveMessage(bytes calldata message, bytes calldata attestation) external returns (bool) {
        bytes32 nonce = _checkHeader(message);
        _verifyAttestation(keccak256(message), attestation);
        if (nonce == bytes32(0) || usedNonces[nonce] == NONCE_USED) revert NonceUsed(nonce);
        usedNonces[nonce] = NONCE_USED;
        bytes calldata body = message[CctpMessageV2.HEADER_LENGTH:];
        _mintFor(body);
        emit MessageReceived(
            msg.sender, uint32(bytes4(message[4:8])), nonce, bytes32(message[44:76]), uint32(bytes4(message[144:148])), body
        );
        return true;
    }

    /// @dev Version, destination, sender and recipient (the messenger), caller; returns the nonce.
    function _checkHeader(bytes calldata message) private view returns (bytes32) {
        if (message.length < CctpMessageV2.HEADER_LENGTH + CctpMessageV2.BODY_LENGTH) revert BadMessage();
        if (uint32(bytes4(message[0:4])) != CctpMessageV2.VERSION) revert BadVersion(uint32(bytes4(message[0:4])));
        if (uint32(bytes4(message[8:12])) != localDomain) revert WrongDestination(uint32(bytes4(message[8:12])));
        bytes32 trusted = CctpMessageV2.toBytes32(messenger);
        if (bytes32(message[44:76]) != trusted) revert UnknownSender(bytes32(message[44:76]));
        if (bytes32(message[76:108]) != trusted) revert UnknownRecipient(bytes32(message[76:108]));
        bytes32 caller = bytes32(message[108:140]);
        if (caller != bytes32(0) && caller != CctpMessageV2.toBytes32(msg.sender)) revert WrongCaller(msg.sender, caller);
        return bytes32(message[12:44]);
    }

    /// @dev Mints a burn body: `amount - feeExecuted` to the recipient, `feeExecuted` to the fee recipient.
    function _mintFor(bytes calldata body) private {
        if (uint32(bytes4(body[0:4])) != CctpMessageV2.BODY_VERSION) revert BadVersion(uint32(bytes4(body[0:4])));
        if (bytes32(body[4:36]) != CctpMessageV2.toBytes32(token)) revert UnsupportedToken(bytes32(body[4:36]));
        address recipient = CctpMessageV2.toAddress(bytes32(body[36:68]));
        uint256 amount = uint256(bytes32(body[68:100]));
        uint256 fee = uint256(bytes32(body[164:196]));
        if (fee > uint256(bytes32(body[132:164])) || fee >= amount) revert FeeTooHigh(fee, uint256(bytes32(body[132:164])));
        IBridgeToken(token).mint(recipient, amount - fee);
        if (fee != 0) IBridgeToken(token).mint(feeRecipient, fee);
        emit MintAndWithdraw(recipient, amount - fee, token, fee);
    }

    /// @dev `signatureThreshold` signatures of distinct enabled attesters, in increasing signer order.
    function _verifyAttestation(bytes32 digest, bytes calldata attestation) private view {
        uint256 threshold = signatureThreshold;
        if (attestation.length != SIGNATURE_LENGTH * threshold) {
            revert InvalidAttestationLength(attestation.length, SIGNATURE_LENGTH * threshold);
        }
        address latest = address(0);
        for (uint256 i = 0; i < threshold; i++) {
            address signer = _recover(digest, attestation[i * SIGNATURE_LENGTH:(i + 1) * SIGNATURE_LENGTH]);
            if (signer <= latest) revert SignerOutOfOrder(signer);
            if (!isEnabledAttester[signer]) revert NotEnabledAttester(signer);
            latest = signer;
        }
    }

    function _recover(bytes32 digest, bytes calldata sig) private pure returns (address) {
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
