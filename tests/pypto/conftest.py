"""Tests here run the real pypto in subprocesses; the `pypto` marker's skip / require
rule lives in tests/conftest.py so that it covers every test directory."""
