"""A gymnasium environment over the MLIR plugin's unroll decisions.

One episode is one kernel. Each step is one innermost affine loop of the
measured code (the kernel and what it calls; the input/checksum helpers
``fill*``/``check*`` keep the default): the observation is the loop's
features (FEATURES, as the plugin sends them), the action an index into
UNROLL_FACTORS. When every loop has an action, the kernel is unrolled by
the stock mlir-opt-19 with the plugin asking these actions over a pipe,
lowered, compiled with clang-19 -O2, checked against the reference output,
and run under callgrind; the reward is the relative reduction of the
instructions retired in ``kernel`` against the pass's default (factor 4
everywhere): 0.1 means 10 % fewer instructions.

    import gymnasium as gym, mlbridge.mlir.env
    env = gym.make("mlbridge/MLIRUnroll-v0", kernels=["matmul", "atax"])
    obs, info = env.reset(seed=0)
    ...

Measurements are cached per (kernel, actions): callgrind counts are exact
and repeatable, so a configuration is measured once.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from . import (DEFAULT_ACTION, FEATURES, UNROLL_FACTORS, MLIRPluginInfo, build_executable,
               count_instructions, find_plugin, kernel_names, kernel_source, run_output,
               serve_unroll)
from ..errors import MLBridgeError

#: Functions whose loops are not measured (inputs and checksums).
HELPER_PREFIXES = ("fill", "check")


def is_measured(context: str) -> bool:
    return not context.startswith(HELPER_PREFIXES)


class KernelLab:
    """Unrolls, builds, checks and measures one kernel; caches the results."""

    def __init__(self, name: str, info: MLIRPluginInfo, workdir: Path):
        self.name = name
        self.info = info
        self.dir = Path(workdir) / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.src = self.dir / "kernel.mlir"
        self.src.write_text(kernel_source(name))
        self._cache: Dict[Tuple[int, ...], int] = {}
        # A probe run with the default answer: which loops the pass asks
        # about, in order, and their features.
        probe = serve_unroll(info, self.src, self.dir / "probe.mlir", lambda f: DEFAULT_ACTION)
        self.contexts: List[str] = list(probe.contexts)
        self.all_features = np.asarray(probe.features, dtype=np.int64)
        self.measured = [i for i, c in enumerate(self.contexts) if is_measured(c)]
        self.features = self.all_features[self.measured]
        self.reference = run_output(build_executable(self.src, self.dir / "plain"))
        self.default_count = self.count([DEFAULT_ACTION] * len(self.measured))

    def count(self, actions: Sequence[int]) -> int:
        """Instructions retired in @kernel with these actions for the measured
        loops (in order); raises if the results differ from the reference."""
        key = tuple(int(a) for a in actions)
        if len(key) != len(self.measured):
            raise ValueError(f"{self.name}: {len(self.measured)} actions needed, got {len(key)}")
        if key not in self._cache:
            full = [DEFAULT_ACTION] * len(self.contexts)
            for slot, a in zip(self.measured, key):
                full[slot] = a
            answers = iter(full)
            tag = "-".join(map(str, key))
            out = self.dir / f"u{tag}.mlir"
            run = serve_unroll(self.info, self.src, out, lambda f: next(answers))
            if list(run.decisions) != full:
                raise MLBridgeError(f"{self.name}: the pass asked {len(run.decisions)} "
                                    f"questions, expected {len(full)}")
            exe = build_executable(out, self.dir / f"u{tag}")
            if run_output(exe) != self.reference:
                raise MLBridgeError(f"{self.name}: unrolling {key} changed the results")
            self._cache[key] = count_instructions(exe)
            for p in self.dir.glob(f"u{tag}*"):
                p.unlink()
        return self._cache[key]

    def reward(self, actions: Sequence[int]) -> float:
        return (self.default_count - self.count(actions)) / self.default_count


class MLIRUnrollEnv(gym.Env):
    """See the module docstring. ``kernels``: names (default: all)."""

    metadata = {"render_modes": []}

    def __init__(self, kernels: Optional[Sequence[str]] = None, build_dir=None, workdir=None):
        self.info = find_plugin(build_dir)
        self.kernels = list(kernels or kernel_names())
        self._tmp = None if workdir else tempfile.TemporaryDirectory(prefix="mlbridge-mlir-")
        self.workdir = Path(workdir or self._tmp.name)
        self.labs: Dict[str, KernelLab] = {}
        self.observation_space = spaces.Box(-1.0, np.inf, shape=(len(FEATURES),), dtype=np.float32)
        self.action_space = spaces.Discrete(len(UNROLL_FACTORS))
        self.lab: Optional[KernelLab] = None
        self.actions: List[int] = []

    def lab_for(self, name: str) -> KernelLab:
        if name not in self.labs:
            self.labs[name] = KernelLab(name, self.info, self.workdir)
        return self.labs[name]

    def _obs(self) -> np.ndarray:
        return self.lab.features[len(self.actions)].astype(np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        name = (options or {}).get("kernel")
        if name is None:
            name = self.kernels[int(self.np_random.integers(len(self.kernels)))]
        self.lab = self.lab_for(name)
        self.actions = []
        if len(self.lab.measured) == 0:
            raise MLBridgeError(f"{name}: no loop to decide")
        return self._obs(), {"kernel": name, "loops": len(self.lab.measured)}

    def step(self, action):
        if self.lab is None:
            raise MLBridgeError("step() before reset()")
        a = int(action)
        if not 0 <= a < len(UNROLL_FACTORS):
            raise ValueError(f"action {a} outside 0..{len(UNROLL_FACTORS) - 1}")
        self.actions.append(a)
        if len(self.actions) < len(self.lab.measured):
            return self._obs(), 0.0, False, False, {}
        count = self.lab.count(self.actions)
        reward = (self.lab.default_count - count) / self.lab.default_count
        info = {"instructions": count, "default_instructions": self.lab.default_count,
                "factors": [UNROLL_FACTORS[x] for x in self.actions]}
        return np.zeros(len(FEATURES), np.float32), float(reward), True, False, info

    def close(self):
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


ENV_ID = "mlbridge/MLIRUnroll-v0"
if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=MLIRUnrollEnv)
