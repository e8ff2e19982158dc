"""Affine loop unrolling for the MLIR plugin (``mlbridge-affine-unroll``),
trained on instructions retired by callgrind (``python -m mlbridge.train
mlir-unroll``; docs/mlir.md). The shipped model and its measurements live
in ``models/mlir/``; :mod:`.trainer` regenerates them."""

from pathlib import Path

__all__ = ["add_arguments", "main", "SHIPPED"]

#: Where the shipped model and its data live (the default output folder).
SHIPPED = Path(__file__).resolve().parents[4] / "models" / "mlir"


def add_arguments(q):
    from ...cli import output_folder
    q.add_argument("--out", default=str(SHIPPED), type=output_folder,
                   help="folder of the model, its metrics and the measurement cache "
                        "(default: the shipped models/mlir)")


def main(args):
    from .trainer import main as train
    return train(args.out)
