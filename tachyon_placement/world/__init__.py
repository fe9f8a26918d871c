"""The read model: each process's copy of the provider graph (a World),
how it follows the engine (WorldCache), and the reads answered from it
(the candidate search's WorldReader)."""
