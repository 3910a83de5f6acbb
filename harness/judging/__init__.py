"""Judging a case: the power-loss explorer (crash states under the posix
and ext4-ordered models), the oracle (one verdict per case) and the tagged
payloads that locate a tear to the block."""
