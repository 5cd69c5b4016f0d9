"""Build recipes (`recipe`: how a context binary is built, so it can be rebuilt and patched)."""
