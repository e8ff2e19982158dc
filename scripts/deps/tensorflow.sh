#!/usr/bin/env bash
# TensorFlow for the TF-AOT runner (docs/tf-aot.md), in its own virtualenv
# .venv-tf: its pins (numpy 2.1, protobuf 5) differ from the project's .venv.
# Only the build uses it (XLA's ahead-of-time compiler and the runtime
# sources the wheel ships); nothing at compiler run time does.
#
# Pinned to tensorflow-cpu 2.19.0, the newest PyPI release whose AOT output
# links with the runtime sources it ships: from 2.20 on, tfcompile emits
# "thunk" code whose header needs compiled Abseil (flat_hash_map, logging,
# Mutex) that the wheel does not contain (docs/tf-aot.md, "Which release").
#
# Idempotent: does nothing when the pinned set is installed. Set
# MLBRIDGE_SKIP_TF=1 to skip (the build then turns the TF-AOT runner off).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ ${MLBRIDGE_SKIP_TF:-0} == 1 ]]; then
  echo "tensorflow.sh: MLBRIDGE_SKIP_TF=1, not installing TensorFlow"
  exit 0
fi

VENV=.venv-tf
# Everything pip resolves for tensorflow-cpu 2.19.0 on CPython 3.11,
# pinned so a fresh machine gets the same set.
PINS=(
  tensorflow-cpu==2.19.0
  absl-py==2.5.1 astunparse==1.6.3 certifi==2026.10.18
  charset-normalizer==3.5.2 flatbuffers==25.12.19 gast==0.7.0
  google-pasta==0.2.0 grpcio==1.85.1 h5py==3.16.0 idna==3.20 keras==3.15.1
  libclang==18.1.1 Markdown==3.11.3 markdown-it-py==4.3.0 MarkupSafe==3.0.4
  mdurl==0.1.2 ml_dtypes==0.6.0 namex==0.1.0 numpy==2.1.3 opt_einsum==3.4.0
  optree==0.20.0 packaging==26.3 protobuf==5.29.6 Pygments==2.21.0
  requests==2.34.2 rich==15.0.0 six==1.17.0 tensorboard==2.19.0
  tensorboard-data-server==0.7.2 tensorflow-io-gcs-filesystem==0.37.1
  termcolor==3.3.0 typing_extensions==4.16.0 urllib3==2.8.0 Werkzeug==3.1.9
  wrapt==2.5.2
)

stamp=$VENV/.mlbridge-pins.sha256
want=$(printf '%s\n' "${PINS[@]}" | sha256sum | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$want" && -x $VENV/bin/python ]]; then
  exit 0
fi

if [[ ! -x $VENV/bin/python ]]; then
  echo "tensorflow.sh: creating $VENV"
  /usr/bin/python3 -m venv "$VENV"
fi
echo "tensorflow.sh: pip install tensorflow-cpu==2.19.0 into $VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "${PINS[@]}"

# The AOT toolchain must be complete: the compiler and the runtime sources.
tf_dir=$("$VENV/bin/python" - <<'PY'
import importlib.util, os
spec = importlib.util.find_spec("tensorflow")
print(os.path.dirname(spec.origin))
PY
)
for f in xla_aot_runtime_src/CMakeLists.txt python/_pywrap_tfcompile.so \
         include/tensorflow/compiler/tf2xla/xla_compiled_cpu_function.h; do
  if [[ ! -e $tf_dir/$f ]]; then
    echo "tensorflow.sh: $tf_dir/$f is missing: the TF-AOT toolchain is incomplete" >&2
    exit 1
  fi
done
echo "$want" > "$stamp"
