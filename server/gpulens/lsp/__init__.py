"""The language server: translates LSP to the pure layers and back, and nothing else."""
