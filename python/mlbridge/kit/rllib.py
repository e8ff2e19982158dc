"""RLlib PPO over :class:`mlbridge.kit.PluginEnv` (docs/gym.md, "RLlib").

RLlib (Ray's RL library) trains a policy with several env runners, each a
Ray actor that owns its environments; here each environment is a
:class:`PluginEnv`, so every step is a request of the real plugin in the
real compiler, over pipes, and the compiler is unchanged. (RLlib's
external-env path would make the compiler side run the model; the
environment keeps the model in Python, where PPO needs it.)

:class:`RLlibEnv` is the adapter RLlib instantiates in each env runner:

* one episode = one compile of one program of the list (round robin,
  each runner starting at its own program), ``{output}`` in the command
  replaced by a file private to the environment;
* the observation: the plugin's numeric features flattened into one
  float32 vector, each squashed by ``sign(x) * log1p(|x|)`` (counts and
  costs span many orders of magnitude; RLlib's default network wants a
  flat Box);
* the action: ``Discrete(n)`` (the plugin's yes/no);
* the reward: at the end of the compile, ``(baseline - .text) / baseline``
  of the output, the baseline being the program's ``.text`` under the
  compiler's own heuristic.

A problem trains with it from its own verb; the inliner's (the inline
advisor in ``clang-19 -Oz`` on C files)::

    python -m mlbridge.train inliner rllib --out build/rllib-run --iterations 10 a.c b.c ...

writes ``curve.json`` (per iteration: episodes, env steps per runner,
mean reward) and ``summary.json`` (the trained policy's greedy choices
against ``-Oz``, file by file, and the smallest compile sampled for each
file, replayed by decision name).
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .env import PluginEnv
from .rewards import text as text_reward, text_size

__all__ = ["RLlibEnv", "flatten", "ppo_config", "train", "greedy_policy", "evaluate"]

#: RLlib's default ``sample_timeout_s`` (60 s) drops an env runner whose
#: compiles are slow without an error; a compile-backed runner gets this.
SAMPLE_TIMEOUT = 900.0


def flatten(obs: Dict[str, np.ndarray], keys: Sequence[str]) -> np.ndarray:
    """The features ``keys`` of a PluginEnv observation as one float32
    vector, each value squashed by ``sign(x) * log1p(|x|)``."""
    x = np.concatenate([np.asarray(obs[k], dtype=np.float64).reshape(-1) for k in keys])
    return (np.sign(x) * np.log1p(np.abs(x))).astype(np.float32)


class RLlibEnv(gym.Env):
    """The gymnasium environment of one RLlib env runner (see the module
    docstring). ``config`` (RLlib's ``env_config``, an ``EnvContext`` in a
    runner, whose ``worker_index`` picks the first program):

    * ``programs``: a list of ``{"name", "command", "channel_env",
      "baseline"}``: the command with ``{output}`` and ``{channel}``
      placeholders, the variables naming the channel, the baseline ``.text``;
    * ``actions``: n of ``Discrete(n)`` (default 2); ``timeout``: seconds
      per compile.

    :attr:`stats` counts what this environment did (compiles, steps, the
    finished episodes with their reward, ``.text`` and assignment) for the trainer's
    curve; :meth:`drain` returns and zeroes them.
    """

    metadata = {"render_modes": []}

    def __init__(self, config=None):
        super().__init__()
        index = int(getattr(config, "worker_index", 0) or 0)   # before dict() drops it
        config = dict(config or {})
        programs = list(config["programs"])
        if not programs:
            raise ValueError("RLlibEnv needs at least one program")
        self._tmp = tempfile.TemporaryDirectory(prefix="mlbridge-rllib-")
        self._next = index % len(programs)
        self.programs = programs
        self.envs: List[PluginEnv] = []
        for k, p in enumerate(programs):
            out = os.path.join(self._tmp.name, f"{k}.o")
            self.envs.append(PluginEnv(
                [a.replace("{output}", out) for a in p["command"]],
                channel_env=p.get("channel_env"), output=out,
                action_space=spaces.Discrete(int(config.get("actions", 2))),
                reward=text_reward(baseline=p["baseline"], relative=True),
                timeout=float(config.get("timeout", 120.0))))
        first = self.envs[0]
        self.keys = list(first.observation_space.keys())   # the flattening's order
        for p, e in zip(programs, self.envs):
            if list(e.observation_space.keys()) != self.keys:
                raise ValueError(f"{p['name']}: the plugin sends other features than for "
                                 f"{programs[0]['name']}")
        size = sum(int(np.prod(first.observation_space[k].shape)) for k in self.keys)
        self.observation_space = spaces.Box(-np.inf, np.inf, (size,), np.float32)
        self.action_space = first.action_space
        self.stats = {"pid": os.getpid(), "worker_index": index, "compiles": 0, "steps": 0,
                      "episodes": []}
        self._env: Optional[PluginEnv] = None
        self._program = None

    def _flat(self, obs):
        return flatten(obs, self.keys)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        # A program whose compile asks nothing gives no episode: the next one.
        for _ in range(len(self.envs)):
            k, self._next = self._next, (self._next + 1) % len(self.envs)
            env = self.envs[k]
            obs, info = env.reset()
            self.stats["compiles"] += 1
            if not info.get("done"):
                self._env, self._program = env, self.programs[k]["name"]
                return self._flat(obs), {"program": self._program}
            env.step(None)   # ends that compile
        raise RuntimeError("no program's compile asked the plugin anything")

    def step(self, action):
        obs, reward, done, truncated, info = self._env.step(int(action))
        self.stats["steps"] += 1
        if done:
            ep = info["episode"]
            self.stats["episodes"].append({"program": self._program, "reward": float(reward),
                                           "steps": len(ep.steps),
                                           "text": text_size(self._env.output),
                                           "assignment": {n: int(a[0]) for n, a in
                                                          ep.assignment().items()}})
        return self._flat(obs), float(reward), done, truncated, {"program": self._program}

    def drain(self):
        """What this environment did since the last call (then zeroed):
        compiles started, steps, the episodes finished."""
        out = dict(self.stats)
        self.stats.update(compiles=0, steps=0, episodes=[])
        return out

    def close(self):
        for env in self.envs:
            env.close()
        self._tmp.cleanup()
        super().close()


def ppo_config(programs, *, env_runners: int = 2, batch: int = 256, minibatch: int = 64,
               epochs: int = 4, lr: float = 1e-3, seed: int = 0, timeout: float = 120.0):
    """RLlib's ``PPOConfig`` for :class:`RLlibEnv` over ``programs``:
    ``env_runners`` runners of one environment each, ``batch`` env steps
    per iteration, a small MLP, gamma 1 (the only reward is the last)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    return (PPOConfig()
            .environment(RLlibEnv, env_config={"programs": list(programs), "timeout": timeout})
            .framework("torch")
            .env_runners(num_env_runners=env_runners, num_envs_per_env_runner=1,
                         num_cpus_per_env_runner=1, sample_timeout_s=SAMPLE_TIMEOUT)
            .learners(num_learners=0)
            .training(train_batch_size_per_learner=batch, minibatch_size=minibatch,
                      num_epochs=epochs, lr=lr, gamma=1.0, lambda_=0.95,
                      entropy_coeff=0.01)
            .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[64, 64]))
            .debugging(seed=seed))


def _start_ray(cpus: int):
    """A private local Ray whose workers import this package."""
    import ray
    if ray.is_initialized():
        return False
    package_root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
    ray.init(num_cpus=cpus, include_dashboard=False, logging_level=logging.WARNING,
             log_to_driver=False, object_store_memory=256 * 1024 * 1024,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    return True


def _drain(env_runner):
    # A runner's env: RLlib's vector wrapper of one gymnasium.make'd RLlibEnv.
    return env_runner.env.unwrapped.envs[0].unwrapped.drain()


def greedy_policy(module, keys):
    """``(observation dict, name) -> action``: the argmax of the trained
    RLlib module's logits, for :meth:`PluginEnv.run`."""
    import torch

    def policy(obs, name):
        x = torch.from_numpy(flatten(obs, keys)[None])
        with torch.no_grad():
            logits = module.forward_inference({"obs": x})["action_dist_inputs"]
        return int(torch.argmax(logits, dim=-1)[0])
    return policy


def train(programs, iterations: int, out_dir=None, *, env_runners: int = 2, batch: int = 256,
          seed: int = 0, log=None, **kw):
    """Trains PPO for ``iterations`` iterations; returns ``{"curve",
    "evaluation", "best", "summary"}`` (also ``curve.json`` and
    ``summary.json`` in ``out_dir`` when given). Each curve row: the
    episodes finished in the iteration (``finished``: program, reward,
    steps, ``.text``) and their mean reward, and what each runner (by pid)
    did in it. ``best``: per program, the smallest sampled compile (its
    iteration, ``.text`` and assignment by decision name). The evaluation
    (:func:`evaluate`) runs in this process."""
    import ray
    log = log or (lambda msg: None)
    started = _start_ray(env_runners)
    algo = None
    try:
        algo = ppo_config(programs, env_runners=env_runners, batch=batch, seed=seed,
                          **kw).build_algo()
        curve, best = [], {}
        for it in range(1, iterations + 1):
            t0 = time.monotonic()
            algo.train()
            stats = algo.env_runner_group.foreach_env_runner(_drain, local_env_runner=False)
            episodes = [e for s in stats for e in s["episodes"]]
            for e in episodes:
                assignment = e.pop("assignment")
                if e["program"] not in best or e["text"] < best[e["program"]]["text"]:
                    best[e["program"]] = {"iteration": it, "text": e["text"],
                                          "assignment": assignment}
            row = {"iteration": it, "seconds": round(time.monotonic() - t0, 2),
                   "episodes": len(episodes),
                   "reward_mean": (float(np.mean([e["reward"] for e in episodes]))
                                   if episodes else None),
                   "runners": [{"pid": s["pid"], "worker_index": s["worker_index"],
                                "compiles": s["compiles"], "steps": s["steps"],
                                "episodes": len(s["episodes"])} for s in stats],
                   "finished": episodes}
            curve.append(row)
            log(f"iteration {it}: {row['episodes']} episodes, mean reward "
                f"{row['reward_mean']}, {row['seconds']} s, steps per runner "
                f"{[r['steps'] for r in row['runners']]}")
            if out_dir is not None:
                _write(out_dir, "curve.json", curve)
        evaluation = evaluate(algo.get_module(), programs, best)
        result = {"curve": curve, "evaluation": evaluation, "best": best,
                  "summary": _summary(evaluation)}
        if out_dir is not None:
            _write(out_dir, "summary.json", result)
        return result
    finally:
        if algo is not None:
            algo.stop()
        if started:
            ray.shutdown()


def evaluate(module, programs, best=None):
    """Each program compiled with the greedy policy of ``module``:
    ``{"program", "baseline", "text", "ratio", "inlined", "calls"}``; with
    ``best`` (program -> ``{"assignment"}``, :func:`train`'s), also
    ``"best_replayed"``: the ``.text`` of that assignment replayed by
    decision name."""
    env = RLlibEnv({"programs": programs})
    try:
        policy = greedy_policy(module, env.keys)
        rows = []
        for p, e in zip(programs, env.envs):
            ep = e.run(policy=policy)
            size = text_size(e.output)
            rows.append({"program": p["name"], "baseline": p["baseline"], "text": size,
                         "ratio": size / p["baseline"], "calls": len(ep.steps),
                         "inlined": sum(int(s.action[0]) for s in ep.steps)})
            if best and p["name"] in best:
                e.run(assignment=best[p["name"]]["assignment"])
                rows[-1]["best_replayed"] = text_size(e.output)
        return rows
    finally:
        env.close()


def _summary(rows):
    return {"text": sum(r["text"] for r in rows), "baseline": sum(r["baseline"] for r in rows),
            "geomean_ratio": math.exp(np.mean([math.log(r["ratio"]) for r in rows])),
            "worse": [r["program"] for r in rows if r["text"] > r["baseline"]],
            "best_replayed": (sum(r["best_replayed"] for r in rows)
                              if all("best_replayed" in r for r in rows) else None)}


def _write(out_dir, name, data):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(out / name)
