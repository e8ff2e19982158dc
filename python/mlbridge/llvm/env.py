"""A gymnasium environment over LLVM's interactive inliner.

One episode is one compilation of one program by ``clang-19 -Oz -c``
(configurable) with the ML inliner in interactive mode:

* ``reset()`` starts the compiler on a program (chosen with the env's
  random generator, or ``options={"program": path_or_index}``) and returns
  the first call site LLVM asks about;
* ``step(action)`` answers that request (1 = inline, 0 = do not) and
  returns the next one;
* the episode terminates when the compiler exits; the final reward is the
  size difference ``baseline - size`` in bytes of the object's executable
  sections, where the baseline is the same command with LLVM's own
  inliner (``reward="relative"`` divides by the baseline). Other steps
  give 0.

Observations are the int64 features of LLVM's header, in header order
(``env.feature_names``); with ``include_default=True`` LLVM's own decision
is the last one (``inlining_default``; on LLVM 17-20 the host repairs
LLVM's misplaced value, and ``callee_basic_block_count`` reads -1).
A compilation that asks nothing ends at ``reset``: the observation is all
zeros and ``info["done"]`` is True; the next ``step`` ends the episode.
"""

import os
import shutil
import tempfile

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..errors import MLBridgeError
from .host import Compilation, run
from ..toolchain.measure import elf_text_size

__all__ = ["InliningEnv", "ENV_ID"]

_I64 = np.iinfo(np.int64)


class InliningEnv(gym.Env):
    """Inlining decisions for real programs, one compilation per episode.

    ``programs``: C/C++ sources or LLVM IR (``.ll``/``.bc``) files.
    ``compiler``: the clang driver (default ``clang-19``); ``opt_level``:
    ``-Oz`` by default (an inliner run that cares about size); ``args``:
    extra driver arguments (e.g. ``-I`` paths). ``timeout``: seconds per
    compilation. ``workdir``: where objects go (a private temporary
    directory by default, removed by ``close()``).
    """

    metadata = {"render_modes": []}

    def __init__(self, programs, *, compiler="clang-19", opt_level="-Oz", args=(),
                 include_default=False, reward="bytes", timeout=120.0, workdir=None):
        super().__init__()
        self.programs = [os.path.abspath(os.fspath(p)) for p in programs]
        if not self.programs:
            raise ValueError("InliningEnv needs at least one program")
        for p in self.programs:
            if not os.path.isfile(p):
                raise ValueError(f"program {p} does not exist")
        if reward not in ("bytes", "relative"):
            raise ValueError(f"reward must be 'bytes' or 'relative', got {reward!r}")
        self.compiler = compiler
        self.opt_level = opt_level
        self.args = list(args)
        self.include_default = bool(include_default)
        self.reward_kind = reward
        self.timeout = float(timeout)
        self._own_dir = workdir is None
        self.workdir = tempfile.mkdtemp(prefix="mlbridge-env-") if workdir is None \
            else os.fspath(workdir)
        self._baselines = {}
        self._comp = self._chan = self._obs = self._program = None
        self._done = True
        self._steps = 0
        self.feature_names = self._probe_features()
        n = len(self.feature_names)
        self.observation_space = spaces.Box(low=_I64.min, high=_I64.max, shape=(n,),
                                            dtype=np.int64)
        self.action_space = spaces.Discrete(2)

    # -- helpers ------------------------------------------------------------------------
    def _cmd(self, program, out):
        return [self.compiler, self.opt_level, *self.args, "-c", program, "-o", out]

    def _probe_features(self):
        """Feature names from LLVM's header (one compilation of the first
        program, answering "never")."""
        names = []

        def never(obs):
            if not names:
                names.extend(s.name for s in obs.feature_specs)
            return 0
        out = os.path.join(self.workdir, "probe.o")
        for program in self.programs:
            res = run(self._cmd(program, out), inline=never, timeout=self.timeout,
                      include_default=self.include_default)
            res.check()
            if names:
                return names
        raise MLBridgeError("none of the programs made LLVM ask an inlining question; "
                            "the environment cannot learn its feature set")

    def baseline_size(self, program):
        """Text size of ``program`` compiled with LLVM's own inliner (cached)."""
        size = self._baselines.get(program)
        if size is None:
            out = os.path.join(self.workdir, "baseline.o")
            res = run(self._cmd(program, out), timeout=self.timeout, tool="clang")
            res.check()
            size = elf_text_size(out)
            if size is None:
                raise MLBridgeError(f"cannot read the text size of {out}")
            self._baselines[program] = size
        return size

    def _stop(self):
        if self._comp is not None:
            self._comp.close()
        self._comp = self._chan = self._obs = None

    def _as_obs(self, obs):
        if all(s.dtype == "int64_t" and s.shape == (1,) for s in obs.feature_specs):
            return np.frombuffer(obs.raw, dtype="<i8").astype(np.int64)
        return np.array([int(np.asarray(obs[n]).reshape(-1)[0]) for n in self.feature_names],
                        dtype=np.int64)

    def _info(self, obs):
        return {"program": self._program, "context": obs.context, "index": int(obs.index)}

    # -- gymnasium API ----------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._stop()
        choice = (options or {}).get("program")
        if choice is None:
            program = self.programs[int(self.np_random.integers(len(self.programs)))]
        elif isinstance(choice, (int, np.integer)):
            program = self.programs[int(choice)]
        else:
            program = os.path.abspath(os.fspath(choice))
            if program not in self.programs:
                self.programs.append(program)
        self._program = program
        os.makedirs(self.workdir, exist_ok=True)
        self.baseline_size(program)
        self._out = os.path.join(self.workdir, "episode.o")
        if os.path.exists(self._out):
            os.unlink(self._out)
        self._comp = Compilation(self._cmd(program, self._out), {"inline": None},
                                 timeout=self.timeout, include_default=self.include_default)
        self._comp.start()
        self._chan = self._comp.channel("inline")
        self._steps = 0
        self._done = False
        obs = self._chan.next()
        if obs is None:
            self._obs = None
            return (np.zeros(len(self.feature_names), dtype=np.int64),
                    {"program": program, "context": None, "index": -1, "done": True})
        self._check_features(obs)
        self._obs = obs
        return self._as_obs(obs), self._info(obs)

    def _check_features(self, obs):
        if len(obs.feature_specs) != len(self.feature_names) or any(
                s.name != n for s, n in zip(obs.feature_specs, self.feature_names)):
            raise MLBridgeError("LLVM's inliner header changed between compilations")

    def step(self, action):
        if self._done or self._comp is None:
            raise MLBridgeError("the episode has ended: call reset()")
        if self._obs is not None:
            if not self.action_space.contains(action):
                raise ValueError(f"action must be 0 or 1, got {action!r}")
            self._chan.answer(self._obs, int(action))
            self._steps += 1
            obs = self._chan.next()
            if obs is not None:
                self._obs = obs
                return self._as_obs(obs), 0.0, False, False, self._info(obs)
        return self._finish()

    def _finish(self):
        res = self._comp.finish()
        self._stop()
        self._done = True
        if res.returncode != 0 or res.error is not None:
            res.check()
        size = elf_text_size(self._out)
        if size is None:
            raise MLBridgeError(f"cannot read the text size of {self._out}")
        base = self._baselines[self._program]
        reward = float(base - size)
        if self.reward_kind == "relative":
            reward = reward / base if base else 0.0
        info = {"program": self._program, "context": None, "index": -1, "size": int(size),
                "baseline_size": int(base), "requests": int(res.requests.get("inline", 0))}
        return (np.zeros(len(self.feature_names), dtype=np.int64), reward, True, False, info)

    def close(self):
        self._stop()
        if self._own_dir and self.workdir and os.path.isdir(self.workdir):
            shutil.rmtree(self.workdir, ignore_errors=True)
        super().close()


#: ``gymnasium.make(ENV_ID, programs=[...])`` works once this module is imported.
ENV_ID = "mlbridge/LLVMInlining-v0"
if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="mlbridge.llvm.env:InliningEnv")
