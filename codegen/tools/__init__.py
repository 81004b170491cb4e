"""Tools built on the library: the CLI, `qkgen check`, the kernel catalog and `qkgen bench`."""
