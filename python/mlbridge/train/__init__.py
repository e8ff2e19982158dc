"""mlbridge.train: train compiler policies through the bridge, at scale.

One package per training problem, listed in :mod:`.registry` (the command
line ``python -m mlbridge.train <problem>`` reads it):

* :mod:`.inliner` -- inlining for size (LLVM's interactive inliner);
* :mod:`.phase_order` -- phase ordering for size (``MLBridgePhaseOrder.so``);
* :mod:`.mlir_unroll` -- affine loop unrolling (the MLIR plugin).

Shared by all of them: :mod:`.cluster` (compiler workers as Ray actors,
replaced when they die), :mod:`.cache` (rollout results kept between runs),
:mod:`.selection` (candidates measured on validation, failures rejected),
:mod:`.results` (log.jsonl and summary.json), :mod:`.export` (ONNX of small
networks), :mod:`.modules` (the corpus splits), :mod:`.evaluate` (a
deployed plugin against ``clang -Oz``), and :mod:`mlbridge.toolchain`
(every compile).

Guide: docs/training.md.
"""
