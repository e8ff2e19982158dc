r"""Command line: run an LLVM tool with its advisors served from Python.

    python -m mlbridge.llvm inline   --policy always  -- \
        opt-19 -passes=scc-oz-module-inliner in.ll -S -o out.ll
    python -m mlbridge.llvm evict    --policy noevict -- llc-19 -O2 in.ll -o in.s
    python -m mlbridge.llvm priority --policy size    -- llc-19 -O2 in.ll -o in.s
    python -m mlbridge.llvm run --inline default --evict first -- clang-19 -O2 -c x.c -o x.o
    python -m mlbridge.llvm policies

The compiler's stdout and stderr pass through; the exit status is the
compiler's (128+N when it died of signal N), except: 124 when the host
stopped it at the time limit, 70 when the host stopped it for another
reason (a policy error, invalid advice, a malformed stream), 2 for bad
arguments or policies, 127 when the compiler cannot be started, 130 on
Ctrl-C.
"""

import argparse
import sys

from . import ADVISORS, builtin_names, run
from .host import DEFAULT_TIMEOUT

EXIT_TIMEOUT = 124
EXIT_HOST_ERROR = 70

_POLICY_HELP = ("a built-in name (see 'policies'), module:function, file.py:function, "
                "or a TorchScript file (.pt)")


def _add_common(p):
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"limit for the whole compilation (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--trace", metavar="FILE.npz",
                   help="record every request and the outcome to this dataset file")
    p.add_argument("--on-invalid", choices=("stop", "fallback"), default="stop",
                   help="invalid advice: stop the compiler (default) or send a safe answer")
    p.add_argument("--include-default", action="store_true", default=None,
                   help="ask LLVM for its default inlining decision (automatic for "
                        "policies that need it)")
    p.add_argument("--tool", choices=("clang", "opt", "llc"),
                   help="which LLVM tool the command runs (default: from its name)")
    p.add_argument("--stats", action="store_true",
                   help="print requests, sessions and timings to stderr at the end")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="-- then the compiler command line")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m mlbridge.llvm",
        description="Run opt/llc/clang with LLVM's ML advisors in interactive mode and "
                    "answer every request with a Python policy.")
    sub = parser.add_subparsers(dest="mode", required=True)
    for name in ADVISORS:
        p = sub.add_parser(name, help=f"serve the {name} advisor")
        p.add_argument("--policy", required=True, help=_POLICY_HELP)
        _add_common(p)
    p = sub.add_parser("run", help="serve several advisors at once")
    for name in ADVISORS:
        p.add_argument(f"--{name}", metavar="POLICY", help=f"{name} policy: {_POLICY_HELP}")
    _add_common(p)
    sub.add_parser("policies", help="list the built-in policies")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.mode == "policies":
        for advisor, names in builtin_names().items():
            print(f"{advisor}: {', '.join(names)}")
        return 0
    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        parser.error("missing the compiler command (after --)")
    if args.mode == "run":
        policies = {n: getattr(args, n) for n in ADVISORS if getattr(args, n)}
        if not policies:
            parser.error("run: give at least one of --inline, --evict, --priority")
    else:
        policies = {args.mode: args.policy}
    try:
        res = run(cmd, tool=args.tool, timeout=args.timeout,
                  include_default=args.include_default, on_invalid=args.on_invalid,
                  trace=args.trace, capture_output=False, **policies)
    except (ValueError, TypeError, ImportError) as e:
        print(f"mlbridge.llvm: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # e.g. the compiler does not exist
        print(f"mlbridge.llvm: error: cannot run {cmd[0]}: {e.strerror or e}",
              file=sys.stderr)
        return 127
    except KeyboardInterrupt:  # the compiler has been stopped
        print("mlbridge.llvm: interrupted", file=sys.stderr)
        return 130
    if args.stats:
        for name in res.requests:
            print(f"mlbridge.llvm: {name}: {res.requests[name]} requests in "
                  f"{res.sessions[name]} session(s), {res.fallbacks[name]} fallbacks",
                  file=sys.stderr)
        per = res.host_seconds / res.total_requests * 1e6 if res.total_requests else 0.0
        print(f"mlbridge.llvm: {res.seconds:.3f} s wall, host {per:.1f} us CPU per request",
              file=sys.stderr)
    if res.error is not None:
        print(f"mlbridge.llvm: error: {res.error}", file=sys.stderr)
        return EXIT_TIMEOUT if res.timed_out else EXIT_HOST_ERROR
    rc = res.returncode
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main())
