"""Robust PCA (principal component pursuit, inexact ALM) recovers low-rank + sparse matrices."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.stages.rpca import default_lambda, robust_pca


def _low_rank_plus_sparse(seed: int, m: int = 150, n: int = 60, rank: int = 2, density: float = 0.03):
    rng = np.random.default_rng(seed)
    low = rng.normal(size=(m, rank)) @ rng.normal(size=(rank, n))
    mask = rng.random((m, n)) < density
    sparse = np.zeros((m, n))
    sparse[mask] = rng.choice([-10.0, 10.0], int(mask.sum()))
    return low, sparse, mask


def test_robust_pca_recovers_the_low_rank_part_and_the_support_of_the_sparse_part():
    low, sparse, mask = _low_rank_plus_sparse(0)
    result = robust_pca(low + sparse)
    assert result.converged
    assert np.linalg.norm(result.low_rank - low) / np.linalg.norm(low) < 1e-4
    assert np.array_equal(np.abs(result.sparse) > 1.0, mask)
    assert result.rank == 2


def test_robust_pca_uses_one_over_root_of_the_larger_side_as_lambda_and_reports_convergence():
    low, sparse, _ = _low_rank_plus_sparse(1)
    result = robust_pca(low + sparse)
    assert result.lam == pytest.approx(default_lambda((150, 60))) == pytest.approx(1 / np.sqrt(150))
    summary = result.summary()
    assert summary["converged"] is True
    assert summary["residual"] < 1e-7
    assert 0 < summary["iterations"] < 1000


def test_robust_pca_says_it_did_not_converge_when_the_iteration_limit_is_hit():
    low, sparse, _ = _low_rank_plus_sparse(2)
    result = robust_pca(low + sparse, max_iter=2)
    assert not result.converged
    assert result.iterations == 2


@pytest.mark.parametrize("bad", [np.zeros((0, 3)), np.array([1.0, 2.0]), np.array([[1.0, np.nan], [0.0, 1.0]])])
def test_robust_pca_rejects_empty_one_dimensional_or_non_finite_input(bad):
    with pytest.raises(ValueError, match="robust_pca"):
        robust_pca(bad)


def test_robust_pca_of_a_zero_matrix_is_zero():
    result = robust_pca(np.zeros((5, 3)))
    assert result.converged
    assert not result.low_rank.any()
    assert not result.sparse.any()
