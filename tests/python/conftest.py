"""Make the in-tree package importable without installing it."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS_DIR = os.path.dirname(HERE)  # build_components.py
PYTHON_DIR = os.path.abspath(os.path.join(HERE, "..", "..", "python"))

for path in (PYTHON_DIR, TESTS_DIR, HERE):
    if path not in sys.path:
        sys.path.insert(0, path)
