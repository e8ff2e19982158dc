"""The shared evolution-strategies pieces (mlbridge.train.es): the
antithetic gradient points uphill, Adam climbs, the module sample covers
every library before repeating one, sigma changes the share of decisions
asked for."""

from types import SimpleNamespace

import numpy as np

from mlbridge.train.es import Adam, es_gradient, sample_modules


def _reward(theta):
    return -float(np.sum((theta - np.array([1.0, -2.0, 0.5])) ** 2))


def test_gradient_points_uphill_and_adam_climbs():
    rng = np.random.default_rng(0)
    theta, sigma = np.zeros(3), 0.1
    start = _reward(theta)
    adam = Adam(0.05)
    for _ in range(200):
        eps = rng.standard_normal((8, 3))
        rp = [_reward(theta + sigma * e) for e in eps]
        rm = [_reward(theta - sigma * e) for e in eps]
        g = es_gradient(rp, rm, eps, sigma)
        true = -2 * (theta - np.array([1.0, -2.0, 0.5]))
        assert g @ true > 0, "the estimate must have a positive component along the true gradient"
        theta = adam.step(theta, g)
    assert _reward(theta) > start * 0.01
    np.testing.assert_allclose(theta, [1.0, -2.0, 0.5], atol=0.1)


def test_equal_rewards_give_no_step():
    eps = np.ones((4, 2))
    assert not np.any(es_gradient([1.0] * 4, [1.0] * 4, eps, 0.1))


def test_sample_spreads_over_libraries():
    mods = [SimpleNamespace(library=lib, n=i) for lib, k in (("a", 5), ("b", 1), ("c", 3))
            for i in range(k)]
    picked = sample_modules(mods, 3, np.random.default_rng(1))
    assert sorted(m.library for m in picked) == ["a", "b", "c"]
    every = sample_modules(mods, 100, np.random.default_rng(2))
    assert len(every) == len(mods) and len({id(m) for m in every}) == len(mods)


def test_sigma_changes_about_the_target_share_of_decisions():
    from mlbridge.train.es import calibrate_sigma
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 5))
    theta = rng.standard_normal(5)

    def decide(th):
        return X @ th > 0

    for target in (0.02, 0.2):
        sigma = calibrate_sigma(theta, decide, target, np.random.default_rng(4))
        shares = [np.mean(decide(theta + sigma * rng.standard_normal(5)) != decide(theta))
                  for _ in range(200)]
        assert target / 2 < np.mean(shares) < target * 2, (target, sigma, np.mean(shares))
