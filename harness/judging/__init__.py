"""Judging a case: the power-loss explorer (crash states under a crash
model of models/, its parts in powerloss/), the oracle (one verdict per
case) and the tagged payloads that locate a tear to the block."""
