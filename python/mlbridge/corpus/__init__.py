"""mlbridge.corpus: real C and C++ code for code-size experiments.

Libraries vendored by pinned crates.io ``-sys`` crates (and csmith programs
with fixed seeds), split by library into train / validation / heldout, as
described by the committed ``corpus/manifest.json``::

    from mlbridge.corpus import Corpus

    corpus = Corpus.load()                 # corpus/manifest.json
    corpus.fetch()                         # download, verify every source file (idempotent)
    for m in corpus.modules(split="train"):
        bc = m.ir()                        # clang-19 -Oz -Xclang -disable-llvm-passes -emit-llvm -c
        size = m.baseline_text()           # .text of clang-19 -Oz -c <source> <flags>

Command line: ``python -m mlbridge.corpus {fetch,build,baseline,check,list,manifest}``.
Guide: docs/corpus.md.
"""

from .compile import CompileError
from .fetch import FetchError
from .manifest import (DEFAULT_MANIFEST, SPLITS, Corpus, CorpusError, Library, Module,
                       default_build_dir, default_cache_dir)

__all__ = ["Corpus", "Library", "Module", "SPLITS", "DEFAULT_MANIFEST", "CorpusError",
           "FetchError", "CompileError", "default_cache_dir", "default_build_dir"]
