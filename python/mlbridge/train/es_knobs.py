"""The knobs every evolution-strategies search of :mod:`.es` has, for the
configurations of the trainers that run one (inliner, phase ordering)."""

__all__ = ["ESKnobs"]


class ESKnobs:
    """``iterations`` ES steps of ``pairs`` antithetic perturbations, each
    measured on ``modules_per_iteration`` sampled modules; the perturbation
    scale changes about ``change`` (a share) of the decisions; ``lr`` is the
    Adam step (None: the trainer's default, a fraction of that scale); no
    iteration starts ``max_minutes`` after the run started (None: no limit;
    the iterate then reached is validated as the last one).

    A subclass sets its own knobs after these; :meth:`as_dict` lists every
    attribute in the order it was set."""

    def __init__(self, *, iterations, pairs, modules_per_iteration, change, lr,
                 max_minutes=None):
        self.iterations = int(iterations)
        self.pairs = int(pairs)
        self.modules_per_iteration = int(modules_per_iteration)
        self.change = float(change)
        self.lr = None if lr is None else float(lr)
        self.max_minutes = None if max_minutes is None else float(max_minutes)

    def stop_at(self, started):
        """The :func:`.es.evolve` ``stop_at`` of a run ``started`` at that
        :func:`time.monotonic` time: ``max_minutes`` later (None: no box)."""
        return None if self.max_minutes is None else started + 60.0 * self.max_minutes

    def as_dict(self):
        return dict(vars(self))
