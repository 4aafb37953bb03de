"""Re-ranking stages: each reorders candidates for its stated reason, keeps the
store's order on ties, and is a no-op when it has nothing to act on."""

from __future__ import annotations

import numpy as np
import pytest

from langmem_ext.stores import rerank


def test_order_by_keeps_incoming_order_on_ties():
    assert rerank.order_by(np.array([0.5, 0.7, 0.5, 0.7])).tolist() == [1, 3, 0, 2]


def test_feedback_lifts_a_candidate_like_the_best_ones_above_an_unlike_one():
    # candidate 2 scores below 1 but points where the best two point
    vecs = np.array([[1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.0, 0.0, 1.0], [0.95, 0.05, 0.0]])
    scores = np.array([0.9, 0.8, 0.6, 0.55])
    assert rerank.feedback(scores, vecs, top=2, weight=0.5).tolist() == [0, 1, 3, 2]


def test_feedback_without_weight_or_candidates_keeps_the_store_order():
    scores = np.array([0.3, 0.9, 0.1])
    vecs = np.eye(3)
    assert rerank.feedback(scores, vecs, weight=0.0).tolist() == [1, 0, 2]
    assert rerank.feedback(np.array([0.4]), np.ones((1, 3))).tolist() == [0]
    assert rerank.feedback(np.zeros(0), np.zeros((0, 3))).tolist() == []


def test_group_boost_lifts_members_of_a_strong_group_and_ignores_ungrouped():
    scores = np.array([0.9, 0.52, 0.5, 0.51])
    groups = ["s1", "s2", "s1", None]
    assert rerank.group_boost(scores, groups, top=1, weight=0.1).tolist() == [0, 2, 1, 3]
    # weight 0: the store's order
    assert rerank.group_boost(scores, groups, weight=0.0).tolist() == [0, 1, 3, 2]


def test_diversify_moves_a_near_duplicate_below_a_different_candidate():
    vecs = np.array([[1.0, 0.0], [0.99, 0.01], [0.0, 1.0]])
    scores = np.array([0.9, 0.89, 0.7])
    assert rerank.diversify(scores, vecs, lam=0.6).tolist() == [0, 2, 1]
    assert rerank.diversify(scores, vecs, lam=1.0).tolist() == [0, 1, 2]


@pytest.mark.parametrize("stage", ["feedback", "diversify"])
def test_stages_return_a_permutation(stage):
    rng = np.random.default_rng(7)
    scores = np.sort(rng.random(30))[::-1]
    vecs = rng.normal(size=(30, 8))
    order = getattr(rerank, stage)(scores, vecs)
    assert sorted(order.tolist()) == list(range(30))
