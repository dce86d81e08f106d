"""The PyPTO back end: emit PyPTO Python, and check it with the real `pypto` package.

`harness` runs a kernel file with pypto in a subprocess; importing this package
imports neither torch nor pypto.
"""
