"""The shortest model-side program: answer a compiler over named pipes.

    python examples/python/serve_model.py /tmp/mlb      # then run ask_model
"""
import sys

from mlbridge import PipeCompilerInterface

with PipeCompilerInterface(base=sys.argv[1], timeout=60) as iface:
    while (obs := iface.evaluate()) is not None:  # None: the compiler is done
        iface.populate_buffer(int(obs["callee_size"][0] < 50))
