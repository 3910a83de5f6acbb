"""The power-loss explorer's parts (harness/judging/explorer.py is its
interface): state (what a crash state is), records (the trace as the
replay reads it), journal (the changes not yet durable), replay (the
visible and durable world, advanced call by call as a crash model
says), unseen (changes no call accounts for), space (the crash states
one crash point allows, and their words), membership (whether a tree
is one of them)."""
