"""mlbridge.train: train compiler policies through the bridge, at scale.

* :mod:`.compile` -- one compilation with a policy, measured as object
  ``.text`` bytes (what results report);
* :mod:`.cluster` -- compiler workers as Ray actors, replaced when they die;
* :mod:`.policy` -- the inlining-for-size policy (numpy, ONNX export);
* :mod:`.inliner` -- the trainer (``python -m mlbridge.train inliner``).

Guide: docs/training.md.
"""
