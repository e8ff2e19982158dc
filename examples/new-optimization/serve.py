"""Serves UnrollCount.so from Python over pipes while clang compiles.

    python serve.py <UnrollCount.so> <clang> <clang arguments...>

Each request is one innermost loop: its features (mlbridge/llvm/Features.h)
and its name (obs.context, "file.c:function:loop<N>", the key for search
and replay); the answer is an index into the plugin's actions: 0 leaves
the loop to LLVM, 1..5 are the unroll counts 1, 2, 4, 8, 16. Prints one line per decision: name, action, features."""
import sys

from mlbridge.toolchain import serve_compiler


def policy(obs):
    """Unroll short counted loops by 4, leave the others to LLVM (a
    stand-in for a model)."""
    trip = int(obs["trip_count"][0])
    return 3 if 0 < trip <= 64 else 0


def main(plugin, clang, *args):
    run = serve_compiler(lambda channel: ["env", f"UNROLL_CHANNEL={channel}", clang,
                                          f"-fpass-plugin={plugin}", *args], policy)
    for name, action, row in zip(run.contexts, run.decisions, run.features):
        print(name, int(action), *(f"{k}={v}" for k, v in zip(run.feature_names, row)))
    sys.stderr.write(run.stderr)
    return run.returncode


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
