"""mlbridge.kit.actions.masked_argmax: the library's action rule (the
largest legal score, the first on ties) for the Python side."""

import numpy as np

from mlbridge.kit.actions import masked_argmax


def test_largest_legal_score_first_on_ties():
    assert masked_argmax([1.0, 5.0, 3.0, 3.0], [True, False, True, True]) == 2
    assert masked_argmax([0.0, 0.0], [1, 1]) == 0
    assert isinstance(masked_argmax(np.float32([2, 1]), [1, 1]), int)


def test_rows_of_a_batch():
    scores = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    legal = np.array([[True, True, False], [False, True, True]])
    assert masked_argmax(scores, legal).tolist() == [1, 1]


def test_an_illegal_best_score_is_never_taken():
    assert masked_argmax([np.inf, -1e30], [False, True]) == 1
