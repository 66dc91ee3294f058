"""The composed profiles an accountant has made and keeps, and the best certified bounds
over them, within the memory and time budget (:mod:`autoacct.limits`).

Every profile made is a certified bound, so an answer may take the best value over any of
them: the more kept, the tighter the answers a later query gets for free. Keeping them all
is not free, though. A profile of 2^22 points holds 32 MiB of masses and, once read, up to
three times that (its points, block sums and monotone deltas; whole suffix sums below 2^20
points). A mechanism composed 5 million times, asked eps at three deltas and then delta at
three eps, had kept 62 profiles, and the process peaked at 6.7 GB. So:

- The profiles kept, with what their reads made, stay under :data:`KEEP_SHARE` of the
  memory budget; past it the oldest are dropped (never a direction's newest, which the
  running query reads). The bounds from the rest stay valid.
- Reading an older profile's deltas the first time (its monotone deltas at every point, a
  pass over all of them) is work the time budget is charged for; one the budget cannot
  afford is left out of the answer, which the profiles read stay certified without.
  The delta query of that sequence had spent 32 s of CPU reading them.

Consistency between the two directions of query (delta(eps(d)) <= d) does not rest on
this best-of-all rule: the public answers are kept and reconciled by
:class:`autoacct.certified.CertifiedPoints`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from autoacct.errors import BudgetExceeded
from autoacct.limits import afford, current
from autoacct.pld.chernoff import ChernoffProfile
from autoacct.pld.costs import nbytes_of
from autoacct.pld.mixture import MixtureProfile
from autoacct.pld.profiles import DiscreteProfile

Composed = DiscreteProfile | ChernoffProfile
Profile = Composed | MixtureProfile
Pair = tuple[Profile, Profile]

#: Share of the memory budget the kept profiles may hold: the working arrays of one step
#: may take half of it (:data:`autoacct.limits.STEP_SHARE`), and the discretised laws and
#: the interpreter the rest.
KEEP_SHARE = 0.25
#: Predicted seconds and bytes per point of a profile's first delta read (its points, block
#: sums and monotone deltas, made in cache-sized chunks): 70-90 ns and 24 bytes a point
#: measured at 2^20-2^22 points on a loaded 2-core machine, the time rounded up.
READ_SECONDS = 1.5e-7
READ_BYTES = 24.0
#: A profile this small is read without a budget check (a check costs more than the read).
_SMALL_READ = 1 << 14


def _discrete(p: Profile) -> list[DiscreteProfile]:
    """The discrete profiles whose arrays reading ``p`` reads."""
    if isinstance(p, DiscreteProfile):
        return [p]
    if isinstance(p, MixtureProfile):
        return list(p.terms)
    return []


def _unread_points(p: Profile) -> int:
    """Points of ``p``'s discrete profiles whose deltas have not been read yet."""
    return sum(len(t.tilted) for t in _discrete(p) if "grid_deltas" not in t.__dict__)


class Made:
    """The (upper, lower) profile pairs made so far, per direction, oldest first.

    ``on_drop`` is told of each pair dropped, so that the accountant's memo forgets it too.
    """

    def __init__(self, directions: int, on_drop: Callable[[Pair], None]) -> None:
        self._lists: list[list[Pair]] = [[] for _ in range(directions)]
        self._on_drop = on_drop
        # The pairs that gave the last answer's best bounds: kept, since the next pass of a
        # refinement often finds nothing better (a coarser grid, another tilt).
        self._best: list[Pair] = []

    def __getitem__(self, d: int) -> list[Pair]:
        return self._lists[d]

    def __iter__(self) -> Iterator[list[Pair]]:
        return iter(self._lists)

    def add(self, d: int, pair: Pair) -> None:
        """Keep direction d's new pair, then drop the oldest pairs past the memory share."""
        self._lists[d].append(pair)
        self.trim()

    def nbytes(self) -> int:
        return sum(nbytes_of(pair) for made in self._lists for pair in made)

    def trim(self, keep: Sequence[Pair] = ()) -> None:
        """Drop the oldest pairs, never a direction's newest, one in ``keep`` nor one that
        gave the last answer's best bound, until the kept ones hold at most
        :data:`KEEP_SHARE` of the memory budget."""
        if all(len(made) <= 1 for made in self._lists):
            return  # (nothing may be dropped: the usual case, checked without summing)
        allowed = KEEP_SHARE * current().memory
        held = self.nbytes()
        keep = [*keep, *self._best]
        while held > allowed:
            ages = [(i, d) for d, made in enumerate(self._lists) for i in range(len(made) - 1)
                    if not any(made[i] is k for k in keep)]
            if not ages:
                return
            i, d = min(ages)
            pair = self._lists[d].pop(i)
            held -= nbytes_of(pair)
            self._on_drop(pair)

    def _readable(self, d: int, fresh: Sequence[Pair]) -> Iterator[Pair]:
        """Direction d's pairs whose deltas may be read now: the newest, those in ``fresh``,
        those read before, and the others, newest first, while the budget affords their
        first read (see the module's docstring)."""
        made = self._lists[d]
        for i in range(len(made) - 1, -1, -1):
            pair = made[i]
            points = sum(_unread_points(p) for p in pair)
            if points > _SMALL_READ and i < len(made) - 1 and not any(pair is f for f in fresh):
                try:
                    afford(points * READ_BYTES, points * READ_SECONDS, f"reading a profile of {points} points")
                except BudgetExceeded:
                    continue
            yield pair

    def delta(self, eps: np.ndarray, fresh: Sequence[Pair] = ()) -> tuple[np.ndarray, np.ndarray]:
        """Best certified (lower, upper) delta(eps) over the pairs readable now; a direction
        with none counts as [0, 1] (what any delta satisfies)."""
        uppers, lowers = [], []
        best: list[Pair] = []
        for d in range(len(self._lists)):
            pairs = list(self._readable(d, fresh))
            if not pairs:
                uppers.append(np.ones(eps.shape))
                lowers.append(np.zeros(eps.shape))
                continue
            up = np.array([np.broadcast_to(u.delta(eps), eps.shape) for u, _ in pairs])
            low = np.array([np.broadcast_to(lo.delta(eps), eps.shape) for _, lo in pairs])
            uppers.append(up.min(axis=0))
            lowers.append(low.max(axis=0))
            best += [pairs[j] for j in {*np.argmin(up, axis=0).ravel(), *np.argmax(low, axis=0).ravel()}]
        self._best = best
        self.trim(fresh)
        return np.max(lowers, axis=0), np.max(uppers, axis=0)

    def epsilon(self, delta: float) -> tuple[float, float]:
        """Best (lower, upper) eps(delta) over every pair kept."""
        upper, lower = -math.inf, 0.0
        best: list[Pair] = []
        for made in self._lists:
            if not made:
                upper = math.inf
                continue
            ups = [float(u.epsilon(delta)) for u, _ in made]
            lows = [float(lo.epsilon(delta)) for _, lo in made]
            upper, lower = max(upper, min(ups)), max(lower, max(lows))
            best += [made[int(np.argmin(ups))], made[int(np.argmax(lows))]]
        self._best = best
        self.trim()
        return lower, upper


def well_inside(profs: list[tuple[DiscreteProfile | MixtureProfile, Profile]], eps: float) -> bool:
    """Whether ``eps`` lies well inside the window of every direction's tilted profile (a
    split law's terms are each tilted for their own part, see :mod:`jumps`)."""
    return all(abs(u.target - eps) <= AIM * eps if isinstance(u, MixtureProfile)
               else u.lam == 0.0 or u.x[0] + 2 * u.h < eps < u.x[-1] - 2 * u.h for u, _ in profs)


#: A split law's terms are aimed again when the answer is this far (relatively) from their target.
AIM = 0.25


def best_curve(made: Sequence[Pair], alpha: np.ndarray) -> np.ndarray:
    """The pointwise largest of the tradeoff curves of the composed upper profiles ``made``,
    each a lower bound (0, the trivial one, where there are none)."""
    ups = [u for u, _ in made if isinstance(u, DiscreteProfile)]
    return np.max([u.tradeoff(alpha) for u in ups] or [np.zeros(np.shape(alpha))], axis=0)
