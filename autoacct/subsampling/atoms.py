"""Poisson subsampling of a base with finitely many atoms: the subsampled laws are atom laws too.

For a base pair (P, Q) on countably many outcomes, held as atoms (loss L_i with
P-mass p_i and Q-mass q_i; an atom of P at L = +inf, one of Q at L = -inf), the
removal pair ((1-q) Q + q P, Q) lives on the same outcomes: outcome i has loss
phi(L_i) = log(1 - q + q e^{L_i}) with masses ((1-q) q_i + q p_i, q_i). The
addition pair (Q, (1-q) Q + q P) has the losses -phi(L_i) with the masses the
other way round. So both laws are finite atom laws, given here exactly (the
base's truncation and merging carry over unchanged: the base's mass at +inf is
mass of P only, which the removal law keeps at +inf with weight q and the
addition law holds at -inf under its second distribution).

Held so, the PLD accountant reads their cell masses by a search in a few dozen
atoms instead of inverting phi at every grid edge, and bounds them from below by
merging the atoms onto the grid (see ``merged_lower`` of
:class:`~autoacct.losses.PrivacyLoss` and :mod:`autoacct.pld.merged`): the subsampled
law of a discrete base has isolated atoms at every scale the accountant uses, which
the cell-by-cell lower construction bounds no better than by rounding them down.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses import DiscreteLoss, PrivacyLoss
from autoacct.losses.atoms import AtomLoss
from autoacct.losses.binary import RandomizedResponseLoss
from autoacct.subsampling.represented import PoissonLossMap, check_q


def held_as_atoms(base: PrivacyLoss) -> bool:
    """Whether the subsampled laws of ``base`` are made atom laws here: bases held as atoms,
    except binary randomized response (PureDP, RandomizedResponse), whose subsampled laws
    keep their earlier form, and with it the answers already given for them (its two
    atoms are composed by the phi accountant's own lattice path)."""
    return isinstance(base, DiscreteLoss) and not isinstance(base, RandomizedResponseLoss)


class TwinnedAtomLoss(AtomLoss):
    """An atom law whose profile, and its rounding bound, are those of ``twin``, the same law
    held otherwise (as the base's profile at a transformed point): one run of the pair is
    then answered exactly as before, from the base's own closed form where it has one.

    Parameters
    ----------
    twin:
        A law equal to this one.
    args, kwargs:
        Those of :class:`~autoacct.losses.atoms.AtomLoss`.
    """

    def __init__(self, twin: PrivacyLoss, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.twin = twin
        self.exact_profile = twin.exact_profile

    def profile(self, eps: np.ndarray) -> np.ndarray:
        return self.twin.profile(eps)

    def profile_error(self, eps: np.ndarray) -> np.ndarray:
        return self.twin.profile_error(eps)

    def profile_with_error(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.twin.profile_with_error(eps)


def _value_error(values: np.ndarray, log_q: float) -> float:
    """A bound on the rounding of phi(L) = logaddexp(log(1-q), log q + L) at the atoms: a few
    roundoffs of the largest term, |L| + |log q|."""
    top = float(np.max(np.abs(values), initial=0.0))
    return 8.0 * MACHINE_EPSILON * (top + abs(log_q) + 1.0)


def poisson_atom_losses(base: DiscreteLoss, q: float, twins: tuple[PrivacyLoss, PrivacyLoss] | None = None
                        ) -> tuple[AtomLoss, AtomLoss]:
    """The removal and addition laws of Poisson subsampling at rate q of the atom law ``base``.

    The atoms of both laws are formed from the base's joint masses (p_i, q_i) alone, so they
    are those of the pairs ((1-q) Q + q P, Q) and (Q, (1-q) Q + q P) for any base pair, also
    one whose two directions differ (a partial balls-in-bins epoch:
    :mod:`~autoacct.subsampling.partial_epoch`); only the twins' profiles assume a symmetric one.

    Parameters
    ----------
    base:
        Law of L = log(dP/dQ) of a base pair (P, Q) held as atoms
        (``values``, ``p_mass``, ``q_mass``, ``p_inf``, ``q_ninf``); symmetric where ``twins``
        are given.
    q:
        Sampling probability, 0 < q < 1.
    twins:
        The removal and addition laws held otherwise (see :class:`TwinnedAtomLoss`), or None:
        then the laws' profiles are their atoms' own.

    Returns
    -------
    (removal, addition):
        Laws of the pairs ((1-q) Q + q P, Q) and (Q, (1-q) Q + q P).
    """
    q = check_q(q)
    phi = PoissonLossMap(q)
    v, pm, qm = base.values, base.p_mass, base.q_mass
    x = phi.forward(v)
    mixed = (1.0 - q) * qm + q * pm
    # The base atom L = -inf (Q-mass q_ninf) is the finite loss log(1-q) of the removal pair,
    # with masses ((1-q) q_ninf, q_ninf); -log(1-q) of the addition pair, masses swapped.
    if base.q_ninf > 0:
        x = np.concatenate(([phi.c], x))
        mixed = np.concatenate(([(1.0 - q) * base.q_ninf], mixed))
        qm = np.concatenate(([base.q_ninf], qm))
    err = _value_error(v, phi.log_q)
    remove_twin, add_twin = (None, None) if twins is None else twins
    removal = _atom_law(remove_twin, ("poisson-remove-atoms", q, base.key), x, mixed, qm,
                        p_inf=q * base.p_inf, p_inf_truncated=q * base.p_inf_truncated,
                        tight=base.tight, merged_lower=True, value_error=err)
    addition = _atom_law(add_twin, ("poisson-add-atoms", q, base.key), -x[::-1], qm[::-1], mixed[::-1],
                         q_ninf=q * base.p_inf, tight=base.tight, merged_lower=True, value_error=err)
    if add_twin is not None:
        # Its profile is the twin's, which counts the base's truncated tails (PoissonAddLoss).
        addition.profile_truncated = add_twin.profile_truncated
    return removal, addition


def _atom_law(twin: PrivacyLoss | None, *args: Any, **kwargs: Any) -> AtomLoss:
    """An :class:`AtomLoss` of ``args`` and ``kwargs``, twinned with ``twin`` where there is one."""
    return AtomLoss(*args, **kwargs) if twin is None else TwinnedAtomLoss(twin, *args, **kwargs)


def symmetrized_atom_loss(half: AtomLoss, twin: PrivacyLoss) -> AtomLoss:
    """The symmetric atom law whose profile agrees with that of the atom law ``half`` for eps >= 0.

    The atom-law form of :class:`~autoacct.subsampling.without_replacement.SymmetrizedLoss`
    (see there for the pair): with (A, B) the pair of ``half``, its atoms of positive loss
    v keep their masses (A, B); each also appears mirrored at -v with masses (B, A); and an
    atom at loss 0 (exact, so never rounded) carries a0 = 1 - A(L > 0) - A(L = inf) - B(L > 0)
    under both. Atoms of ``half`` at losses <= 0 are left out: their mass is in a0.

    ``twin`` is the same law held otherwise (see :class:`TwinnedAtomLoss`). Raises
    ValueError when a0 < 0, as SymmetrizedLoss does.
    """
    pos = half.values > 0
    v, pa, pb = half.values[pos], half.p_mass[pos], half.q_mass[pos]
    a0 = 1.0 - float(pa.sum()) - half.p_inf - float(pb.sum())
    if a0 < -1e-12:
        raise ValueError("the law has too much mass above 0 to be the positive part of a "
                         f"symmetric pair (atom at 0 would be {a0:.3g})")
    a0 = max(a0, 0.0)
    values = np.concatenate((-v[::-1], [0.0], v))
    p = np.concatenate((pb[::-1], [a0], pa))
    q = np.concatenate((pa[::-1], [a0], pb))
    err = np.full(values.shape, float(np.max(half.value_error)))
    err[len(v)] = 0.0
    return TwinnedAtomLoss(twin, ("symmetrized-atoms", half.key), values, p, q, p_inf=half.p_inf, q_ninf=half.p_inf,
                    p_inf_truncated=half.p_inf_truncated, tight=half.tight, merged_lower=True,
                    value_error=err)
