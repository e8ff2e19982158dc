"""Which modules a problem trains and selects on: the corpus's training and
validation splits (held-out libraries are never touched) or IR files given
on the command line."""

import logging
import random
from pathlib import Path

from ..cli import existing_file

__all__ = ["IRModule", "corpus_modules", "select_modules", "training_modules",
           "add_module_arguments"]

_log = logging.getLogger("mlbridge.train")


class IRModule:
    """A module given as an IR file on the command line (no corpus)."""

    def __init__(self, path, library=None):
        self.path = Path(path)
        self.name = str(self.path)
        self.library = library or self.path.stem

    def ir(self, build_dir=None):
        return self.path


def corpus_modules(split, args):
    """The corpus modules of ``split`` (``args.manifest``, ``args.libraries``)."""
    from ..corpus import Corpus
    corpus = Corpus.load(args.manifest) if args.manifest else Corpus.load()
    mods = corpus.modules(split=split)
    if args.libraries:
        mods = [m for m in mods if m.library in args.libraries]
    return mods


def select_modules(mods, args, limit):
    """Modules small enough to train on (bitcode size cap), at most limit."""
    out = []
    for m in mods:
        if not getattr(m, "ir_matches", True):
            continue  # its IR does not compile to the -Oz object: no valid reward
        try:
            ir = Path(m.ir(args.build_dir))
        except Exception as e:  # a TU the corpus cannot build: leave it out, say so
            _log.warning("%s: %s", m.name, e)
            continue
        if args.max_ir_kb and ir.stat().st_size > args.max_ir_kb * 1024:
            continue
        out.append(m)
    if limit:
        random.Random(0).shuffle(out)
        out = sorted(out[:limit], key=lambda m: m.name)
    return out


def training_modules(args):
    """(training modules, validation modules): exactly the IR files of
    ``--train-ir`` / ``--validation-ir`` when given, else the corpus's
    training / validation split (each side on its own)."""
    def side(files, split, limit):
        if files:
            return [IRModule(p) for p in files]
        return select_modules(corpus_modules(split, args), args, limit)
    return (side(args.train_ir, "train", args.max_train),
            side(args.validation_ir, "validation", args.max_validation))


def add_module_arguments(q):
    """The options of :func:`training_modules` (and ``--address``)."""
    q.add_argument("--address", default=None,
                   help="Ray cluster address ('auto' or host:port); default: local Ray")
    q.add_argument("--manifest", default=None, help="corpus manifest (default: the repo's)")
    q.add_argument("--build-dir", default=None, help="where the corpus IR is built")
    q.add_argument("--libraries", nargs="*", default=None, help="only these libraries")
    q.add_argument("--max-ir-kb", type=int, default=600,
                   help="leave out modules whose bitcode is larger (training speed)")
    q.add_argument("--max-train", type=int, default=None)
    q.add_argument("--train-ir", nargs="*", default=None, type=existing_file,
                   help="train on exactly these IR files instead of the corpus's training "
                        "split")
    q.add_argument("--validation-ir", nargs="*", default=None, type=existing_file,
                   help="select on exactly these IR files instead of the corpus's "
                        "validation split")
