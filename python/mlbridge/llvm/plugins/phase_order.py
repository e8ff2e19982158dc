"""PhaseOrderEnv: the phase-ordering plugin as a ``gymnasium.Env``.

Each episode compiles one program with ``clang-19 -Oz -c
-fpass-plugin=MLBridgePhaseOrder.so``: the pass runs where clang's -Oz
pipeline ends (OptimizerLast), sends an observation, this environment hands
it to the agent (``reset`` / ``step`` return it), the agent's action goes
back to the pass, which runs that pass sub-sequence and observes again; the
object file clang writes is the episode's result. ``compiler="opt"`` runs
``opt-19 -passes=<pipeline_prefix>,mlbridge-phase-order`` instead (the
episode starts on the program as it is, or after ``pipeline_prefix``)::

    from mlbridge.llvm.plugins import PhaseOrderEnv

    with PhaseOrderEnv(["a.ll", "b.ll"], max_steps=10) as env:
        obs, info = env.reset(seed=0)
        done = False
        while not done:
            obs, reward, terminated, truncated, info = env.step(agent(obs))
            done = terminated or truncated
        env.output_path   # the optimized module of the episode

* observation: ``Box((327,), float32)`` -- the plugin's ``observation``
  counts (27, :data:`OBSERVATION_NAMES`, non-negative) followed by its
  ``embedding`` (300, :data:`EMBEDDING_DIM`: IR2Vec's module vector per IR
  instruction).
* action: ``Discrete(22)`` -- :data:`ACTIONS`; 21 is STOP.
* reward: the module's ``.text`` bytes before the step minus after (the
  object the compiler's code generator makes of it); positive when the code
  got smaller. ``size="tti"`` uses TargetTransformInfo's estimate instead.
* terminated: the agent chose STOP, or an action that left the module
  unchanged (the plugin ends the episode there). truncated: the step budget
  (``max_steps``) ran out. Either way the episode is over and the compiler
  has written ``output_path``.
* ``lookahead=True``: ``info["lookahead"]`` is the ``.text`` after each of
  the 21 actions from the current state (-1 where one failed), for oracles.

``pipeline_prefix`` (opt only, e.g. ``"default<O1>"``) runs passes before
the agent starts (the episode then begins on their result). ``start``
(names of stock size flags: ``mergefunc``, ``ir-outliner``,
``machine-outliner``) begins the episode from the module as those flags
leave it, so that STOP at once gives their object (in clang).

Transport: named pipes (``transport="pipe"``, the default) or gRPC
(``transport="grpc"``, when the mlbridge.grpc package and the plugin's gRPC
runner are available): the plugin is the client, this environment hosts the
server.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ...errors import MLBridgeError, TimeoutError
from ...pipe import PipeCompilerInterface
from ...toolchain import process, toolchain
from ._plugins import (ACTIONS, EMBEDDING_DIM, NUM_ACTIONS, NUM_OBSERVATIONS, STOP_ACTION,
                       PluginInfo, find_plugins, tool_env)


#: Upper bound of every observation entry (counts of a module stay far below).
OBSERVATION_HIGH = 1e9

#: The length of the environment's observation: counts, then the embedding.
OBSERVATION_SIZE = NUM_OBSERVATIONS + EMBEDDING_DIM

#: gymnasium id: ``gymnasium.make(ENV_ID, programs=[...], max_steps=10)``.
ENV_ID = "mlbridge/PhaseOrder-v0"


class CompilerFailed(MLBridgeError):
    """opt-19 exited with an error or without finishing the episode."""


class PhaseOrderEnv(gym.Env):
    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, programs: Sequence[Union[str, os.PathLike]], *,
                 max_steps: int = 10, transport: str = "pipe",
                 plugins: Optional[PluginInfo] = None, opt: Optional[str] = None,
                 timeout: float = 60.0, extra_args: Sequence[str] = (),
                 workdir: Optional[Union[str, os.PathLike]] = None,
                 pipeline_prefix: str = "",
                 compiler: str = "clang", clang: Optional[str] = None,
                 compile_flags: Sequence[str] = (), size: str = "text",
                 lookahead: bool = False, start: Sequence[str] = (),
                 render_mode: Optional[str] = None):
        if not programs:
            raise ValueError("PhaseOrderEnv needs at least one program (.ll or .bc)")
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"unsupported render_mode {render_mode!r}")
        if transport not in ("pipe", "grpc"):
            raise ValueError("transport must be 'pipe' or 'grpc'")
        if compiler not in ("clang", "opt"):
            raise ValueError("compiler must be 'clang' or 'opt'")
        if size not in ("text", "tti"):
            raise ValueError("size must be 'text' or 'tti'")
        if pipeline_prefix and compiler != "opt":
            raise ValueError("pipeline_prefix needs compiler='opt' (in clang the "
                             "episode starts where -Oz ends)")
        self.programs = [Path(p) for p in programs]
        self.max_steps = int(max_steps)
        self.transport = transport
        self.compiler = compiler
        self.clang = clang or toolchain().clang
        self.plugins = plugins or find_plugins(llvm=toolchain(self.clang).major)
        self.opt = opt or toolchain(self.clang).tool("opt")
        self.compile_flags = list(compile_flags)
        self.size = size
        self.lookahead = bool(lookahead)
        self.start = tuple(start)
        self.timeout = float(timeout)
        self.extra_args = list(extra_args)
        self.pipeline_prefix = pipeline_prefix
        self.render_mode = render_mode
        # Counts: non-negative; the bound only documents "large" (float32).
        # The embedding's entries have either sign.
        low = np.concatenate([np.zeros(NUM_OBSERVATIONS), np.full(EMBEDDING_DIM, -1e6)])
        high = np.concatenate([np.full(NUM_OBSERVATIONS, OBSERVATION_HIGH),
                               np.full(EMBEDDING_DIM, 1e6)])
        self.observation_space = spaces.Box(low.astype(np.float32), high.astype(np.float32),
                                            (OBSERVATION_SIZE,), np.float32)
        self.action_space = spaces.Discrete(NUM_ACTIONS)

        self._own_dir = None
        if workdir is None:
            self._own_dir = tempfile.TemporaryDirectory(prefix="mlbridge-po-")
            workdir = self._own_dir.name
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._iface = None
        self._proc: Optional[subprocess.Popen] = None
        self._episode = 0
        self._active = False
        self._size = 0
        self._steps = 0
        self.program: Optional[Path] = None
        self.output_path: Optional[Path] = None
        self.actions: List[int] = []
        self.code_sizes: List[int] = []
        self.stderr = ""
        self._stderr_file = None

    # ---- the channel to the plugin -------------------------------------------

    def _interface(self):
        if self._iface is None:
            if self.transport == "pipe":
                self._iface = PipeCompilerInterface(serdes="bitstream",
                                                    timeout=self.timeout)
            else:
                try:
                    from ...grpc import GrpcCompilerInterface
                except Exception as exc:  # not built / not installed
                    raise MLBridgeError(f"transport 'grpc' is unavailable: {exc}") from exc
                if not self.plugins.has_runner("grpc"):
                    raise MLBridgeError("transport 'grpc': the plugin was built "
                                        "without the gRPC runner")
                self._iface = GrpcCompilerInterface("127.0.0.1:0")
        return self._iface

    def _settings(self) -> Dict[str, str]:
        """The plugin's settings for this episode (its MLBRIDGE_PO_* variables
        reach it in clang and opt alike)."""
        iface = self._interface()
        env = {"MLBRIDGE_PO_MAX_STEPS": str(self.max_steps),
               "MLBRIDGE_PO_TIMEOUT_MS": str(int(self.timeout * 1000)),
               "MLBRIDGE_PO_SIZE": self.size,
               "MLBRIDGE_PO_LOOKAHEAD": "1" if self.lookahead else "0",
               "MLBRIDGE_PO_START": ",".join(self.start)}
        if self.transport == "pipe":
            env.update(MLBRIDGE_PO_RUNNER="pipe", MLBRIDGE_PO_CHANNEL=str(iface.base))
        else:
            env.update(MLBRIDGE_PO_RUNNER="grpc", MLBRIDGE_PO_SERVER=iface.address)
        return env

    def _command(self) -> List[str]:
        if self.compiler == "clang":
            return [self.clang, "-Oz", "-c", f"-fpass-plugin={self.plugins.phase_order}",
                    *self.compile_flags, *self.extra_args, str(self.program),
                    "-o", str(self.output_path)]
        return [self.opt, f"-load-pass-plugin={self.plugins.phase_order}",
                "-passes=" + ",".join(p for p in (self.pipeline_prefix,
                                                  "mlbridge-phase-order") if p),
                *self.extra_args, str(self.program), "-S", "-o", str(self.output_path)]

    def _collect_stderr(self) -> None:
        """The compiler's stderr so far. It goes to a file, not a pipe: a
        compiler with a lot to say would block on a full pipe that nobody
        reads while it waits for the next action."""
        if self._stderr_file is not None:
            self._stderr_file.seek(0)
            self.stderr = self._stderr_file.read().decode(errors="replace")
            self._stderr_file.close()
            self._stderr_file = None

    def _stop_process(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        process.kill(proc)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - after SIGKILL
            pass
        self._collect_stderr()

    def _receive(self):
        """The next observation, or CompilerFailed if opt ended instead."""
        iface = self._interface()
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._stop_process()
                raise TimeoutError(f"no observation from {self.compiler} within "
                                   f"{self.timeout:.0f} s")
            try:
                obs = iface.evaluate(timeout=min(left, 10.0))
            except TimeoutError:
                if self._proc is not None and self._proc.poll() is not None:
                    obs = None
                else:
                    continue
            if obs is not None:
                return obs
            if self._proc is None or self._proc.poll() is not None:
                self._finish_process(expect_done=False)

    def _finish_process(self, expect_done: bool) -> None:
        proc = self._proc
        try:
            proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self._stop_process()
            raise TimeoutError(f"{self.compiler} did not exit within {self.timeout:.0f} s "
                               f"after the episode")
        self._proc = None
        self._collect_stderr()
        if proc.returncode != 0 or not expect_done:
            self._active = False
            raise CompilerFailed(
                f"{self.compiler} exited with status {proc.returncode} "
                f"{'after' if expect_done else 'before the end of'} the episode "
                f"(program {self.program}):\n{self.stderr[-3000:]}")

    @staticmethod
    def _vector(obs) -> np.ndarray:
        return np.concatenate([
            np.array(obs["observation"], dtype=np.float32).reshape(NUM_OBSERVATIONS),
            np.array(obs["embedding"], dtype=np.float32).reshape(EMBEDDING_DIM)])

    # ---- gymnasium API ----------------------------------------------------------

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        super().reset(seed=seed)
        aborted = self._active or self._proc is not None
        self._stop_process()
        if aborted and self._iface is not None:
            # The abandoned episode may have left an unanswered observation
            # or half a message in the channel: start from a fresh one.
            self._iface.close()
            self._iface = None
        self._active = False
        options = options or {}
        program = options.get("program")
        if program is None:
            program = self.programs[int(self.np_random.integers(len(self.programs)))]
        elif isinstance(program, int):
            program = self.programs[program]
        self.program = Path(program)
        self._episode += 1
        suffix = ".o" if self.compiler == "clang" else ".ll"
        self.output_path = self.workdir / f"episode{self._episode}{suffix}"
        env = tool_env(self.plugins)
        env.update(self._settings())
        if self.compiler == "clang":
            env["MLBRIDGE_PO_ENABLE"] = "1"
        self._stderr_file = tempfile.TemporaryFile(dir=self.workdir)
        self._proc = process.start(self._command(), stdout=subprocess.DEVNULL,
                                   stderr=self._stderr_file, env=env)
        if self.transport == "pipe":
            self._interface().process = self._proc
        self._active = True
        obs = self._receive()
        self._size = int(obs["code_size"][0])
        self._steps = 0
        self.actions = []
        self.code_sizes = [self._size]
        return self._vector(obs), self._info(obs)

    def _info(self, obs) -> Dict[str, Any]:
        info = {"program": str(self.program), "code_size": int(obs["code_size"][0]),
                "step": int(obs["step"][0])}
        if "lookahead" in obs:
            info["lookahead"] = np.asarray(obs["lookahead"], dtype=np.int64).reshape(-1)
        return info

    def step(self, action):
        if not self._active:
            raise RuntimeError("the episode is over: call reset() first")
        if not self.action_space.contains(action):
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        action = int(action)
        self._interface().populate_buffer(action)
        self.actions.append(action)
        obs = self._receive()
        size = int(obs["code_size"][0])
        reward = float(self._size - size)
        self._size = size
        if action != STOP_ACTION:
            self.code_sizes.append(size)
        done = bool(int(obs["done"][0]))
        # STOP, or an action that changed nothing, ends the episode before
        # the budget; the budget running out is a truncation.
        terminated = done and (action == STOP_ACTION or int(obs["step"][0]) < self.max_steps)
        truncated = done and not terminated
        info = self._info(obs)
        if done:
            # The final observation is a report; the pass ignores the reply.
            self._interface().populate_buffer(0)
            self._active = False
            self._finish_process(expect_done=True)
            info["output"] = str(self.output_path)
        return self._vector(obs), reward, terminated, truncated, info

    def render(self):
        if self.render_mode != "ansi":
            return None
        names = ", ".join(ACTIONS[a] for a in self.actions) or "(none)"
        return (f"{self.program}: actions {names}; code size "
                f"{' -> '.join(map(str, self.code_sizes))}\n")

    def close(self):
        self._stop_process()
        if self._iface is not None:
            self._iface.close()
            self._iface = None
        if self._own_dir is not None:
            self._own_dir.cleanup()
            self._own_dir = None
        super().close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=f"{__name__}:PhaseOrderEnv")
