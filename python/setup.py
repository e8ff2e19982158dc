"""Build hook of the mlbridge package (metadata lives in pyproject.toml).

`pip install ./python` generates the gRPC stubs of ../proto/mlbridge.proto
into mlbridge/grpc/_generated with grpcio-tools (a build requirement), so
the installed package has a working mlbridge.grpc; an editable install
generates them in the source tree. Without the proto or grpcio-tools the
package still builds (mlbridge.grpc then says how to generate them).

It also copies the plugins' protocol files (../integrations/llvm/*/*.def)
into mlbridge/llvm/plugins/protocols, where mlbridge.llvm.plugins reads
them outside a checkout; an editable install reads the checkout's.
"""

import glob
import os
import shutil
import sys
import warnings

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithStubs(build_py):
    def run(self):
        super().run()
        proto_dir = os.path.join(HERE, os.pardir, "proto")
        if getattr(self, "editable_mode", False):
            out = os.path.join(HERE, "mlbridge", "grpc", "_generated")
        else:
            out = os.path.join(self.build_lib, "mlbridge", "grpc", "_generated")
        try:
            sys.path.insert(0, os.path.join(HERE, "mlbridge", "grpc"))
            import _stubs  # the generator, loaded without importing mlbridge
            _stubs.generate(proto_dir, out)
        except Exception as e:  # never fail the whole package for it
            warnings.warn(f"mlbridge: gRPC stubs not generated ({e}); "
                          f"run `python -m mlbridge.grpc._stubs` after installing")
        finally:
            sys.path.pop(0)
        if not getattr(self, "editable_mode", False):
            protocols = os.path.join(self.build_lib, "mlbridge", "llvm", "plugins", "protocols")
            os.makedirs(protocols, exist_ok=True)
            for p in glob.glob(os.path.join(HERE, os.pardir, "integrations", "llvm", "*",
                                            "*Protocol.def")):
                shutil.copy(p, protocols)


setup(cmdclass={"build_py": BuildPyWithStubs})
