#!/usr/bin/env bash
# Installs the IR2Vec seed vocabulary into .deps/ir2vec/ (docs/ir2vec.md):
#   seedEmbeddingVocab.txt   IR2Vec's own file (63 entities x 300 floats,
#                            "name:[v1, ...]" per line), read by our LLVM 19
#                            embedder (integrations/llvm/ir2vec)
#   seedEmbeddingVocab.json  the same vectors in the layout LLVM 22's
#                            vocabulary loader reads (-ir2vec-vocab-path),
#                            every LLVM 22 entity present (ir2vec_vocab.py)
#   METADATA, SOURCE         the wheel's metadata (licence: BSD 4-Clause) and
#                            where the files come from
# Source: the PyPI wheel IR2Vec==2.1.1 (cp311, manylinux), checked against its
# pinned sha256, and the vocabulary file inside against its own. The wheel's
# library (LLVM 16) is not used. Idempotent: does nothing when the stamp file
# matches.
set -euo pipefail
cd "$(dirname "$0")/../.."
DEPS_NAME=ir2vec.sh
source scripts/deps/lib/install.sh

VERSION=2.1.1
WHEEL=IR2Vec-$VERSION-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
WHEEL_SHA256=db68a3196c666476f1fa2dc83a0bca5b9695ae0b0745ae8df3cd4914cf51f2cb
VOCAB_SHA256=0732d8fa867785bed04afcaa522011e42b36df7d0f16af6ae26fbba12b8c77dd
DEST=.deps/ir2vec
STAMP=$DEST/.installed
CONVERTER=scripts/deps/ir2vec_vocab.py
want="$WHEEL_SHA256 $(sha256sum "$CONVERTER" | cut -d' ' -f1)"

if deps_installed "$STAMP" "$want" "$DEST/seedEmbeddingVocab.txt" \
     "$DEST/seedEmbeddingVocab.json"; then
  exit 0
fi
python=python3
[[ -x .venv/bin/python ]] && python=.venv/bin/python
deps_require "" unzip sha256sum

echo "install-deps: IR2Vec $VERSION seed vocabulary from PyPI"
deps_workdir

# The wheel is platform-specific; pip is told which one so it downloads that
# exact file on any host (nothing of it is installed or run).
"$python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version 3.11 --implementation cp --platform manylinux_2_17_x86_64 \
  "IR2Vec==$VERSION" -d "$work" >&2
[[ -f $work/$WHEEL ]] || deps_fail "pip did not download $WHEEL"
deps_check sha256 "$WHEEL_SHA256" "$work/$WHEEL" "the wheel"
unzip -q -j "$work/$WHEEL" ir2vec/seedEmbeddingVocab.txt "IR2Vec-$VERSION.dist-info/METADATA" -d "$work"
deps_check sha256 "$VOCAB_SHA256" "$work/seedEmbeddingVocab.txt" "the vocabulary"

stage=$work/stage
mkdir -p "$stage"
cp "$work/seedEmbeddingVocab.txt" "$work/METADATA" "$stage/"
"$python" "$CONVERTER" "$stage/seedEmbeddingVocab.txt" "$stage/seedEmbeddingVocab.json"
cat > "$stage/SOURCE" <<SRC
IR2Vec $VERSION seed vocabulary (ir2vec/seedEmbeddingVocab.txt, sha256
$VOCAB_SHA256) from the PyPI wheel $WHEEL
(sha256 $WHEEL_SHA256), installed by scripts/deps/ir2vec.sh.
seedEmbeddingVocab.json is generated from it by $CONVERTER.
Licence: BSD 4-Clause (METADATA; https://github.com/IITH-Compilers/IR2Vec).
SRC
deps_commit "$stage" "$DEST" "$want" "IR2Vec vocabulary"
