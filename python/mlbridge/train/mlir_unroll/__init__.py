"""Affine loop unrolling for the MLIR plugin (``mlbridge-affine-unroll``),
trained on instructions retired by callgrind (``python -m mlbridge.train
mlir-unroll``; docs/mlir.md). The shipped model lives in ``models/mlir/``,
its metrics and measurements in ``results/mlir-unroll/``; :mod:`.trainer`
regenerates them."""

from pathlib import Path

__all__ = ["add_arguments", "main", "SHIPPED", "RECORDS"]

_REPO = Path(__file__).resolve().parents[4]
#: Where the shipped model lives (the default output folder).
SHIPPED = _REPO / "models" / "mlir"
#: Where its metrics and measurement cache live (the default records folder).
RECORDS = _REPO / "results" / "mlir-unroll"


def add_arguments(q):
    from ...cli import output_folder
    q.add_argument("--out", default=str(SHIPPED), type=output_folder,
                   help="folder of the model (default: the shipped models/mlir)")
    q.add_argument("--records", default=str(RECORDS), type=output_folder,
                   help="folder of its metrics and the measurement cache "
                        "(default: results/mlir-unroll)")


def main(args):
    from .trainer import main as train
    return train(args.out, args.records)
