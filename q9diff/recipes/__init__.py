"""Build recipes (`recipe`: how a context binary is built, so it can be rebuilt and patched) and the
cumulative rebuilds of `q9diff steps` (`steps`)."""
