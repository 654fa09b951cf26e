"""The `edgetts` command line."""
