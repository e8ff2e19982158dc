"""The Python side of a new ML-driven decision (docs/gym.md).

* :class:`PluginEnv` -- a gymnasium environment for any plugin or tool that
  asks a model through the library's runners: an episode is one run of the
  user's command, a step one request (pipes, shared memory or gRPC). It
  records ``(decision name, features, action)`` per step and replays a
  fixed assignment by decision name.
* :mod:`mlbridge.kit.rewards` -- rewards computed from an episode's
  outputs: ``.text`` bytes of an object or linked binary, callgrind Ir of a
  run.

gymnasium is imported on first use of :class:`PluginEnv`.
"""

from .._lazy import lazy_attributes

__all__ = ["PluginEnv", "Episode", "Step", "decision_base", "ENV_ID"]

__getattr__, __dir__ = lazy_attributes(globals(), {name: ".env" for name in __all__})
