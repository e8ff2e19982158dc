"""PluginEnv: any plugin's requests as a ``gymnasium.Env`` (docs/gym.md).

An episode is one run of the user's command (a compiler with a plugin, a
tool); the command learns the channel through ``{channel}`` in its
arguments or in the environment variables the user names. A step is one
request of the plugin: the observation is the request's features (a dict of
numpy arrays), the action is the reply. At the end of the episode the
reward function gets the :class:`Episode` (the exit status, the output
file, every step).

Decision names (the key of recording and replay): a request's name is its
``decision`` feature (a string or an integer; the name is configurable)
if it has one, else the request's context; the k-th repetition of a name in
an episode is ``name#k`` (a name never seen before keeps its plain form,
an empty one is always numbered: ``#0``, ``#1``, ...). Names are stable
across runs of the same command as long as the plugin asks in the same
order, which a deterministic compiler does.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Union

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .. import dtypes
from ..errors import MLBridgeError, TimeoutError
from ..toolchain import process
from ..toolchain.tools import output_path
from ..tensor_spec import TensorSpec
from ..toolchain import TRANSPORTS, CompileError, first_error, open_interface, plugin_env

__all__ = ["PluginEnv", "Episode", "Step", "decision_base", "ENV_ID"]

#: ``gymnasium.make(ENV_ID, command=[...], channel_env={...})``.
ENV_ID = "mlbridge/Plugin-v0"

#: How long one wait for a request lasts before the compiler process is
#: looked at again (gRPC learns of a dead compiler only from the process).
_POLL = {"pipe": 30.0, "shm": 30.0, "grpc": 0.5}


@dataclass
class Step:
    """One request: its decision name, features (copies), the reply sent,
    and who chose it: "agent" (step()), "assignment", "policy" or
    "default" (:meth:`PluginEnv.run`)."""

    decision: str
    features: Dict[str, np.ndarray]
    action: np.ndarray
    by: str
    context: str = ""


@dataclass
class Episode:
    """One finished run of the command."""

    command: List[str]
    returncode: int
    stdout: str
    stderr: str
    #: The command's ``-o`` file (None if it has none).
    output: Optional[str]
    steps: List[Step] = field(default_factory=list)
    cpu_seconds: float = 0.0
    reward: Optional[float] = None

    def assignment(self) -> Dict[str, np.ndarray]:
        """decision name -> action of every step (what replays this run)."""
        return {s.decision: s.action for s in self.steps}


def decision_base(obs, key: str = "decision") -> str:
    """A request's name before numbering: feature ``key`` (string or
    integer) if the request has it, else its context."""
    specs = {s.name: s for s in obs.feature_specs}
    spec = specs.get(key)
    if spec is not None:
        value = obs[key]
        if spec.is_string:
            return value if isinstance(value, str) else bytes(value).decode()
        return str(int(np.asarray(value).reshape(-1)[0]))
    return obs.context or ""


def _space(spec: TensorSpec):
    shape = tuple(spec.shape)
    if dtypes.is_bool(spec.dtype):
        return spaces.MultiBinary(shape)
    dt = spec.np_dtype
    if dtypes.is_integer(spec.dtype):
        info = np.iinfo(dt)
        return spaces.Box(info.min, info.max, shape, dt)
    return spaces.Box(-np.inf, np.inf, shape, dt)


def _protocol(specs):
    """What must stay the same from request to request: a string's shape is
    its length, which may vary."""
    return [(s.name, s.dtype, None if s.is_string else tuple(s.shape)) for s in specs]


class PluginEnv(gym.Env):
    """Episodes are runs of ``command``, steps the requests of its plugin.

    ``command``: the argument list (``"{channel}"`` anywhere in an argument
    is replaced by the channel), or a function ``channel -> argv``.
    ``channel_env``: environment variables naming the channel, e.g.
    ``{"MLBRIDGE_LD_CHANNEL": "{channel}", "MLBRIDGE_LD_RUNNER": "pipe"}``
    (added to ``env``, default this process's environment).
    ``transport``: "pipe" (the channel is a FIFO base path), "shm" (a Unix
    socket path) or "grpc" (``host:port`` served here); ``serdes`` for
    pipes and shared memory.

    ``feature_specs``/``advice_spec``: the protocol, if known; otherwise a
    first run answering every request with the default learns it from the
    plugin's header (:attr:`probe` is that episode). ``observation_space``
    is a Dict of the numeric features (string features are in
    ``info["strings"]``); ``action_space`` defaults to a Box of the advice's
    shape and type (give e.g. ``Discrete(2)`` for a yes/no decision).
    ``encode``: ``(action, observation) -> advice`` if the action is not
    itself the reply.

    ``assignment``: decision name -> action, answered inside the
    environment (the agent never sees those requests; also per episode with
    ``reset(options={"assignment": ...})``). ``default_action``: the reply
    where nothing else decides (default: zeros of the advice).
    ``reward``: ``Episode -> float``, called when the command has exited
    (:mod:`mlbridge.kit.rewards`); every other step's reward is 0.
    ``output``: the file the reward reads (default: the command's ``-o``).
    ``timeout``: seconds per run; ``cwd``: where the command runs.
    """

    metadata = {"render_modes": []}

    def __init__(self, command: Union[Sequence, Callable[[str], Sequence]], *,
                 channel_env: Optional[Mapping[str, str]] = None, transport: str = "pipe",
                 serdes: str = "bitstream", reward: Optional[Callable[[Episode], float]] = None,
                 assignment: Optional[Mapping[str, object]] = None, default_action=None,
                 feature_specs: Optional[Sequence[TensorSpec]] = None,
                 advice_spec: Optional[TensorSpec] = None, action_space=None,
                 encode: Optional[Callable] = None, decision_feature: str = "decision",
                 output=None, env: Optional[Mapping[str, str]] = None, cwd=None,
                 timeout: float = 120.0):
        super().__init__()
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, "
                             f"got {transport!r}")
        if (feature_specs is None) != (advice_spec is None):
            raise ValueError("give both feature_specs and advice_spec, or neither")
        self.command = command
        self.channel_env = dict(channel_env or {})
        self.transport = transport
        self.serdes = serdes
        self.reward_fn = reward
        self.assignment = dict(assignment or {})
        self.default_action = default_action
        self.encode = encode
        self.decision_feature = decision_feature
        self.output = None if output is None else os.fspath(output)
        self.base_env = dict(os.environ if env is None else env)
        self.cwd = cwd
        self.timeout = float(timeout)
        self._tmp = tempfile.TemporaryDirectory(prefix="mlbridge-kit-")
        self._run = None          # the running episode's state
        self.episode: Optional[Episode] = None   # the last finished one
        self.probe: Optional[Episode] = None
        if feature_specs is None:
            self.feature_specs = self.advice_spec = None
            self.probe = self._episode(None, self.assignment, reward=False)
            if self.feature_specs is None:
                raise MLBridgeError(f"{self._describe()} made no request: the protocol "
                                    f"cannot be learnt from it (give feature_specs and "
                                    f"advice_spec)")
        else:
            self.feature_specs = tuple(feature_specs)
            self.advice_spec = advice_spec
        self.observation_space = spaces.Dict({s.name: _space(s) for s in self._numeric})
        self.action_space = action_space if action_space is not None else \
            _space(self.advice_spec)

    # ---- one run of the command ------------------------------------------------------
    def _describe(self):
        return self.command[0] if isinstance(self.command, (list, tuple)) else "the command"

    def _argv(self, channel):
        if callable(self.command):
            return [os.fspath(a) for a in self.command(channel)]
        return [os.fspath(a).replace("{channel}", channel) for a in self.command]

    def _launch(self, channel):
        run = self._run
        run.argv = self._argv(channel)
        env = dict(self.base_env)
        env.update({k: v.replace("{channel}", channel) for k, v in self.channel_env.items()})
        run.out = open(os.path.join(self._tmp.name, "stdout"), "w+b")
        run.err = open(os.path.join(self._tmp.name, "stderr"), "w+b")
        try:
            run.proc = process.start(run.argv, env=plugin_env(run.argv, env, self.cwd),
                                     cwd=self.cwd, stdout=run.out, stderr=run.err)
        except OSError as e:
            raise CompileError(f"cannot run {run.argv[0]}: {e}") from None
        return run.proc

    def _open(self):
        """The interface of one episode, with the command started."""
        iface, endpoint = open_interface(self.transport, self.serdes, min(self.timeout, 60.0))
        try:
            proc = self._launch(endpoint)
        except BaseException:
            iface.close()
            raise
        if self.transport != "grpc":   # gRPC learns of a dead compiler only by polling
            iface.process = proc
        return iface

    def _start(self, assignment):
        self._stop()
        self._run = _Run(time.monotonic() + self.timeout, dict(assignment))
        try:
            self._run.iface = self._open()
        except BaseException:
            self._stop()
            raise

    def _next_request(self):
        """The next request of the running command, or None once it has exited."""
        run = self._run
        while True:
            left = run.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{run.argv[0]} did not finish within {self.timeout:g} s")
            try:
                obs = run.iface.evaluate(timeout=min(left, _POLL[self.transport]))
            except TimeoutError:
                if run.proc.poll() is not None:
                    return None
                continue
            if obs is not None:
                return obs
            if run.proc.poll() is not None:
                return None

    def _name(self, obs):
        base = decision_base(obs, self.decision_feature)
        k = self._run.seen.get(base, 0)
        self._run.seen[base] = k + 1
        return base if base and k == 0 else f"{base}#{k}"

    def _learn_protocol(self, obs):
        specs = tuple(obs.feature_specs)
        if self.feature_specs is None:
            self.feature_specs, self.advice_spec = specs, obs.advice_spec
        elif _protocol(specs) != _protocol(self.feature_specs) or \
                obs.advice_spec != self.advice_spec:
            raise MLBridgeError(f"the plugin's protocol changed: {obs.advice_spec.describe()} "
                                f"from {len(specs)} features, expected "
                                f"{self.advice_spec.describe()} from "
                                f"{len(self.feature_specs)}")

    def _answer(self, obs, name, action, by):
        advice = self.encode(action, obs) if self.encode is not None else action
        sent = np.array(advice, dtype=obs.advice_spec.np_dtype).reshape(-1)
        features = {s.name: (obs[s.name] if s.is_string else np.array(obs[s.name]))
                    for s in obs.feature_specs}
        self._run.iface.populate_buffer(advice)
        self._run.steps.append(Step(name, features, sent, by, obs.context or ""))

    def _default(self, obs):
        if self.default_action is not None:
            return self.default_action
        return np.zeros(obs.advice_spec.shape, obs.advice_spec.np_dtype)

    def _advance(self, policy=None):
        """Answers requests inside the environment (assigned ones; with
        ``policy``, all) until one is for the agent: (observation, name), or
        None once the command has exited."""
        run = self._run
        while True:
            obs = self._next_request()
            if obs is None:
                return None
            self._learn_protocol(obs)
            name = self._name(obs)
            if name in run.assignment:
                self._answer(obs, name, run.assignment[name], "assignment")
            elif policy is not None:
                self._answer(obs, name, *policy(obs, name))
            else:
                return obs, name

    def _finish(self, reward=True) -> Episode:
        run = self._run
        try:
            run.proc.wait(timeout=max(1.0, run.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"{run.argv[0]} did not finish within {self.timeout:g} s") \
                from None
        run.out.seek(0)
        run.err.seek(0)
        ep = Episode(run.argv, run.proc.returncode, run.out.read().decode(errors="replace"),
                     run.err.read().decode(errors="replace"),
                     self.output or output_path(run.argv[1:]), run.steps,
                     process.cpu_seconds(run.proc) or 0.0)
        self._stop()
        if ep.returncode != 0:
            why = (f"killed by signal {-ep.returncode}" if ep.returncode < 0
                   else f"exit status {ep.returncode}")
            raise CompileError(f"{first_error(ep.stderr) or 'no error message'} "
                               f"({os.path.basename(ep.command[0])}, {why})")
        if reward and self.reward_fn is not None:
            ep.reward = float(self.reward_fn(ep))
        self.episode = ep
        return ep

    def _stop(self):
        run, self._run = self._run, None
        if run is None:
            return
        if run.proc is not None and run.proc.poll() is None:
            process.kill(run.proc, wait=10)
        if run.iface is not None:
            run.iface.close()
        for f in (run.out, run.err):
            if f is not None:
                f.close()

    # ---- observations ----------------------------------------------------------------
    @property
    def _numeric(self):
        return [s for s in self.feature_specs if not s.is_string]

    def _observation(self, obs):
        return {s.name: np.array(obs[s.name], dtype=s.np_dtype).reshape(s.shape)
                for s in self._numeric}

    def _zero_observation(self):
        return {s.name: np.zeros(s.shape, s.np_dtype) for s in self._numeric}

    def _info(self, obs, name):
        strings = {s.name: obs[s.name] for s in obs.feature_specs if s.is_string}
        return {"decision": name, "context": obs.context or "", "strings": strings}

    # ---- gymnasium API ---------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        """Starts the command; the first request for the agent. A run that
        asks the agent nothing ends here: ``info["done"]`` is True, the
        observation zeros, and the next ``step`` ends the episode."""
        super().reset(seed=seed)
        options = options or {}
        self._start(options.get("assignment", self.assignment))
        try:
            got = self._advance()
        except BaseException:
            self._stop()
            raise
        self._run.current = got
        if got is None:
            return self._zero_observation(), {"decision": None, "context": "", "strings": {},
                                              "done": True}
        return self._observation(got[0]), self._info(*got)

    def step(self, action):
        run = self._run
        if run is None:
            raise MLBridgeError("the episode has ended: call reset()")
        try:
            if run.current is not None:
                obs, name = run.current
                self._answer(obs, name, action, "agent")
                run.current = self._advance()
                if run.current is not None:
                    return (self._observation(run.current[0]), 0.0, False, False,
                            self._info(*run.current))
            ep = self._finish()
        except BaseException:
            self._stop()
            raise
        return (self._zero_observation(), 0.0 if ep.reward is None else ep.reward, True,
                False, {"decision": None, "context": "", "strings": {}, "episode": ep})

    def run(self, policy=None, assignment=None) -> Episode:
        """One whole episode without an agent: each request is answered by
        ``assignment`` (decision name -> action; default: the
        environment's), else ``policy(observation, name) -> action``, else
        the default action. Returns the :class:`Episode` (reward computed)."""
        return self._episode(policy, self.assignment if assignment is None else assignment)

    def _episode(self, policy, assignment, reward=True):
        def decide(obs, name):
            if policy is not None:
                return policy(self._observation(obs), name), "policy"
            return self._default(obs), "default"
        self._start(assignment)
        try:
            self._advance(decide)
            return self._finish(reward)
        except BaseException:
            self._stop()
            raise

    def close(self):
        self._stop()
        self._tmp.cleanup()
        super().close()


@dataclass
class _Run:
    """The state of the episode running."""

    deadline: float
    assignment: Dict[str, object]
    iface: object = None
    proc: object = None
    argv: List[str] = field(default_factory=list)
    out: object = None
    err: object = None
    steps: List[Step] = field(default_factory=list)
    seen: Dict[str, int] = field(default_factory=dict)
    current: object = None


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="mlbridge.kit.env:PluginEnv")
