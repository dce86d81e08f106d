"""The numpy back end: run a `pto` module on numpy arrays."""
