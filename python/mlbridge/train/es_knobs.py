"""The knobs every evolution-strategies search of :mod:`.es` has, for the
configurations of the trainers that run one (inliner, phase ordering)."""

__all__ = ["ESKnobs"]


class ESKnobs:
    """``iterations`` ES steps of ``pairs`` antithetic perturbations, each
    measured on ``modules_per_iteration`` sampled modules; the perturbation
    scale changes about ``change`` (a share) of the decisions; ``lr`` is the
    Adam step (None: the trainer's default, a fraction of that scale).

    A subclass sets its own knobs after these; :meth:`as_dict` lists every
    attribute in the order it was set."""

    def __init__(self, *, iterations, pairs, modules_per_iteration, change, lr):
        self.iterations = int(iterations)
        self.pairs = int(pairs)
        self.modules_per_iteration = int(modules_per_iteration)
        self.change = float(change)
        self.lr = None if lr is None else float(lr)

    def as_dict(self):
        return dict(vars(self))
