// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.24;

/// @title GasBurningToken
/// @notice Test-only hostile ERC-20 (the hostile-input suite, issue 39): balances and allowances
///         like any token, but `transfer` and `transferFrom` first burn gas in a loop whose length
///         is set at construction, as an attacker's token would inside a transaction we pay for.
///         Never deploy it anywhere that holds value.
contract GasBurningToken {
    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    error InsufficientBalance();
    error InsufficientAllowance();

    string public constant name = "Burn";
    string public constant symbol = "BURN";
    uint8 public constant decimals = 6;
    uint256 public immutable burnRounds;

    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    constructor(uint256 rounds) {
        burnRounds = rounds;
    }

    function mint(address to, uint256 value) external {
        balanceOf[to] += value;
        emit Transfer(address(0), to, value);
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _burnGas();
        _move(msg.sender, to, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        _burnGas();
        uint256 allowed = allowance[from][msg.sender];
        if (allowed < value) revert InsufficientAllowance();
        if (allowed != type(uint256).max) allowance[from][msg.sender] = allowed - value;
        _move(from, to, value);
        return true;
    }

    function _move(address from, address to, uint256 value) private {
        if (balanceOf[from] < value) revert InsufficientBalance();
        balanceOf[from] -= value;
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }

    /// @dev Hashing in scratch space (no memory growth, so the cost is linear in the rounds) that the
    ///      optimizer cannot drop: its result decides a (never taken) revert.
    function _burnGas() private view {
        uint256 x = uint256(uint160(msg.sender));
        uint256 rounds = burnRounds;
        for (uint256 i = 0; i < rounds; ++i) {
            assembly {
                mstore(0, x)
                mstore(32, i)
                x := keccak256(0, 64)
            }
        }
        if (x == 0) revert();
    }
}
