"""The one evolution-strategies implementation (mlbridge.train.es): the
antithetic gradient points uphill, Adam climbs, the module sample covers
every library before repeating one, sigma changes the share of decisions
asked for, and the loop every trainer runs validates on schedule and
stops when told."""

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


def _evolve(**kw):
    from mlbridge.train.es import evolve
    validated, rows = [], []
    args = dict(iterations=60, pairs=6, sigma=0.1, rng=np.random.default_rng(5),
                sample=lambda r: None,
                rewards=lambda thetas, batch, row: [_reward(t) for t in thetas],
                validate=lambda it, theta, row: validated.append((it, theta.copy())),
                log=rows.append)
    args.update(kw)
    theta = evolve(np.zeros(3), **args)
    return theta, validated, rows


def test_evolve_climbs_with_either_estimate_and_step():
    from mlbridge.train.es import Step, rank_gradient
    target = np.array([1.0, -2.0, 0.5])
    theta, _, rows = _evolve(optimizer=Adam(0.05))
    np.testing.assert_allclose(theta, target, atol=0.15)
    theta, _, _ = _evolve(gradient=rank_gradient, optimizer=Step(0.05), iterations=200)
    np.testing.assert_allclose(theta, target, atol=0.3)
    assert rows[-1]["train_reward"] > rows[0]["train_reward"]
    assert all(r["stage"] == "es" and r["sigma"] == 0.1 for r in rows)


def test_evolve_validates_every_nth_and_the_last_iterate():
    theta, validated, rows = _evolve(iterations=7, eval_every=3, optimizer=Adam(0.05))
    assert [it for it, _ in validated] == [3, 6, 7]
    np.testing.assert_array_equal(validated[-1][1], theta)
    assert [r["iteration"] for r in rows] == list(range(1, 8))


def test_evolve_rewards_plus_then_minus_and_a_skipped_batch_takes_no_step():
    seen = []

    def rewards(thetas, batch, row):
        seen.append(np.array(thetas))
        return None if len(seen) == 1 else [_reward(t) for t in thetas]

    theta, _, rows = _evolve(iterations=2, pairs=3, rewards=rewards, optimizer=Adam(0.05))
    first = seen[0]
    np.testing.assert_allclose(first[:3] + first[3:], 0.0, atol=1e-12)  # theta = 0: +e, -e
    assert "skipped" in rows[0] and "train_reward" not in rows[0]
    np.testing.assert_allclose(seen[1][:3] + seen[1][3:], 0.0, atol=1e-12)  # no step taken
    assert "train_reward" in rows[1] and np.any(theta != 0)


def test_evolve_stops_after_the_deadline_and_validates_that_iterate():
    import time
    theta, validated, rows = _evolve(iterations=50, eval_every=100, optimizer=Adam(0.05),
                                     stop_at=time.monotonic() - 1.0)
    assert len(rows) == 1 and [it for it, _ in validated] == [1]
