#!/usr/bin/env python3
"""The Python side of examples/rl: the two agents of the toy phase-ordering
environment, served over named pipes while the C++ pass runs.

    python examples/rl/python_agent.py --base /tmp/rl &
    build/examples/rl/mlbridge-rl-example --pipe /tmp/rl

Each agent is the PyTorch module of tools/models/nets.py with the weights of
models/rl_<agent>_agent.npz -- the network exported to
models/rl_<agent>_agent.onnx -- and answers with the argmax of its scores.
So the C++ pass takes the same decisions with this process (training) as
with the ONNX models in-process (deployment, ``--onnx models``). This is
where a training loop would go: the observations arrive as numpy arrays
and the action goes back with populate_buffer().
"""

import argparse
import os
import sys
import threading

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tools", "models"))

import torch  # noqa: E402

import nets  # noqa: E402
from mlbridge import PipeCompilerInterface  # noqa: E402

AGENTS = {"pass": nets.PASS_ACTIONS, "factor": nets.FACTOR_ACTIONS}


def make_policy(module):
    def policy(obs):
        x = torch.from_numpy(np.array(obs["obs"], dtype=np.float32).reshape(1, -1))
        with torch.no_grad():
            scores = module(x)
        return int(torch.argmax(scores[0]))  # first maximum on ties, like C++
    return policy


def serve_agent(name, base, model_dir, timeout, errors):
    try:
        module = nets.load_module(nets.PolicyNet(n_actions=AGENTS[name]),
                                  os.path.join(model_dir, f"rl_{name}_agent.npz"))
        with PipeCompilerInterface(base=f"{base}.{name}", timeout=timeout) as iface:
            iface.serve(make_policy(module), sessions=1)
    except BaseException as e:  # reported by the main thread
        errors.append(f"agent {name}: {e!r}")


def main():
    ap = argparse.ArgumentParser(description="Serve the toy RL agents over pipes.")
    ap.add_argument("--base", required=True, help="channel base; FIFOs BASE.<agent>.in/.out")
    ap.add_argument("--models", default=os.path.join(ROOT, "models"))
    ap.add_argument("--timeout", type=float, default=30.0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    errors = []
    threads = [threading.Thread(target=serve_agent,
                                args=(n, args.base, args.models, args.timeout, errors))
               for n in AGENTS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
