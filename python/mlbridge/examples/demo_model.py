"""The project's demo model: a tiny deterministic policy served over pipes.

    python -m mlbridge.examples.demo_model --base BASE [--serdes bitstream|json]
        [--sessions N] [--timeout S] [--verbose]

Score = sum over features i of weight_i * mean(feature_i), with fixed
weights; a string feature contributes its length. The advice has the advice
spec's dtype: integers ``int(score) % 10``, floats the score, bool
``score > 0``; a fixed-shape advice gets that many elements, a dynamic one
three rows. Serves ``--sessions`` sessions (default: until no compiler
connects within ``--timeout``), then exits 0. Logs to stderr with
``--verbose`` only; never writes to stdout.
"""

import argparse
import math
import sys

import numpy as np

from mlbridge import PipeCompilerInterface, TimeoutError, dtypes

_F32_MAX = float(np.finfo(np.float32).max)


def weight(i):
    """Fixed, deterministic weight of the i-th feature."""
    return (1.0 if i % 2 == 0 else -0.5) / (1 + i % 7)


def score(obs):
    total = 0.0
    for i, name in enumerate(obs):
        value = obs[name]
        if isinstance(value, str):
            contribution = float(len(value))
        elif value.size == 0:
            contribution = 0.0
        else:
            contribution = float(np.mean(value, dtype=np.float64))
        if math.isfinite(contribution):
            total += weight(i) * contribution
    return total if math.isfinite(total) else 0.0


def advice_for(spec, s):
    """An advice value of ``spec``'s dtype and size derived from score ``s``."""
    if spec.is_dynamic:
        count = 3 * spec.fixed_element_count
    else:
        count = spec.element_count
    if spec.is_string:
        text = str(int(s) % 10) * count
        return text
    if dtypes.is_integer(spec.dtype):
        lo, hi = dtypes.integer_bounds(spec.dtype)
        base = int(s) if abs(s) < 2 ** 62 else 0
        vals = [min(max((base + k) % 10, lo), hi) for k in range(count)]
    elif dtypes.is_float(spec.dtype):
        v = max(-_F32_MAX, min(_F32_MAX, s)) if spec.dtype == "float" else s
        vals = [v + k for k in range(count)] if count > 1 else [v] * count
    else:
        vals = [s > 0] * count
    return vals


def policy(obs):
    return advice_for(obs.advice_spec, score(obs))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m mlbridge.examples.demo_model",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="channel base path (BASE.in/BASE.out)")
    parser.add_argument("--serdes", choices=("bitstream", "json"), default="bitstream")
    parser.add_argument("--sessions", type=int, default=None,
                        help="serve this many compiler sessions, then exit")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds to wait for a compiler or a message (default 60)")
    parser.add_argument("--verbose", action="store_true", help="log requests to stderr")
    args = parser.parse_args(argv)

    def log(text):
        if args.verbose:
            print(f"demo_model: {text}", file=sys.stderr, flush=True)

    def logged_policy(obs):
        s = score(obs)
        advice = advice_for(obs.advice_spec, s)
        log(f"context={obs.context!r} observation={obs.index} features={len(obs)} "
            f"score={s:.6g} advice={advice!r}")
        return advice

    try:
        with PipeCompilerInterface(args.base, args.serdes, timeout=args.timeout) as iface:
            n = iface.serve(logged_policy, sessions=args.sessions)
    except TimeoutError as e:
        print(f"demo_model: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a clear one-line error, not a traceback
        print(f"demo_model: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    log(f"answered {n} request(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
