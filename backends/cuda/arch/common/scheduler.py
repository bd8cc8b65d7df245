"""The tile scheduler: work unit -> output tile ``(m_blk, n_blk, l)`` (and k-block range).

One component for both GEMM families.  A kernel runs *work units* ``unit`` in
``[0, num_units)``:

* persistent (SM90): ``for (unit = first; unit < num_units; unit += step)`` with ``first =
  blockIdx.x / C`` and ``step = gridDim.x / C``, ``C = cluster_m * cluster_n`` the CTAs of a
  cluster (one cluster = one unit);
* grid-based (SM80): ``unit = blockIdx.x`` (:meth:`TileScheduler.grid_unit`), no loop.

A unit is mapped to a tile by

1. split-K (``splits``): ``unit = tile * splits_k + split`` (the splits of a tile on
   consecutive units); split ``s`` of ``S`` covers k-blocks ``[floor(s*KB/S),
   floor((s+1)*KB/S))``: contiguous, disjoint, covering ``[0, KB)``, sizes within 1;
2. batch: ``l = tile // per_l``, ``r = tile % per_l`` with ``per_l`` the tiles (cluster
   units) of one batch: L is the outermost mode;
3. grouped raster inside a batch: groups of ``G`` unit-rows along M (``raster="m"``) or
   unit-columns along N (``raster="n"``), column-major (row-major) inside a group, the last
   group narrower when ``G`` does not divide the count;
4. cluster: a unit is a ``cluster_m x cluster_n`` block of tiles; the CTA of cluster rank
   ``rank`` takes the tile ``(m_unit * cluster_m + rank % cluster_m, n_unit * cluster_n + rank
   / cluster_m)`` (CuTe's cluster layout ``(cluster_m, cluster_n) : (1, cluster_m)``);
   ``G = max(1, group // cluster_m)`` unit-rows (``group // cluster_n`` unit-columns with
   ``raster="n"``).

Laws (``tests/backend/test_scheduler.py`` checks them by evaluating the emitted IR with NumPy
against :func:`model`): over ``unit in [0, num_units)`` and ``rank in [0, C)`` every ``(m_blk,
n_blk, l[, split])`` with ``m_blk < round_up(num_m, cluster_m)`` and ``n_blk < round_up(num_n,
cluster_n)`` is produced exactly once; the k-block ranges of one tile partition ``[0, KB)``.

Stream-K hook: a stream-K kernel maps its piece counter to an output tile itself
(``gemm_sm90_streamk``) and passes that tile index as ``unit`` with ``splits=False``.

The mapping is a short *program* of :class:`Step` bindings (each a named IR expression, later
steps reading earlier names through bounded IR variables); :meth:`TileScheduler.emit` declares
them in a :class:`~backends.cuda.builder.KernelBuilder`, :func:`run` evaluates them (NumPy).
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import ir
from ...ir import Node

__all__ = ["TileScheduler", "Step", "Outputs", "run", "model"]

_I32 = (1 << 31) - 1


@dataclass(frozen=True)
class Step:
    """``name = node``: a ``const int`` declared here (``out=False``) or an assignment to a
    variable the kernel declared (``out=True``: ``m_blk``, ``n_blk``, ``l_``, ...)."""

    name: str
    node: Node
    out: bool = False


@dataclass(frozen=True)
class Outputs:
    """The names the kernel declared for the scheduler's results."""

    m: str = "m_blk"
    n: str = "n_blk"
    l: str = "l_"
    split: str = "split_"
    kb_lo: str = "kb_lo_"
    kb_hi: str = "kb_hi_"


@dataclass(frozen=True)
class TileScheduler:
    """Grouped raster, batch, cluster and split-K units (see the module docstring).

    ``group``: unit-rows (``raster="m"``) or unit-columns (``raster="n"``) per group, before
    the cluster division; ``cluster_m`` / ``cluster_n``: CTAs per cluster along M / N;
    ``splits``: units are
    ``(tile, split)`` pairs, ``splits_k`` a kernel parameter; ``batched=False``: the units
    cover one batch (the kernel takes the batch from ``blockIdx.z``; no ``l`` is computed)."""

    group: int = 8
    raster: str = "m"
    cluster_m: int = 1
    cluster_n: int = 1
    splits: bool = False
    batched: bool = True

    def __post_init__(self):
        if self.raster not in ("m", "n"):
            raise ValueError(f"TileScheduler: raster must be 'm' or 'n', not {self.raster!r}")
        if self.group < 1 or self.cluster_m < 1 or self.cluster_n < 1:
            raise ValueError("TileScheduler: group, cluster_m and cluster_n must be >= 1")

    @property
    def cluster_size(self) -> int:
        """CTAs of one cluster (one work unit)."""
        return self.cluster_m * self.cluster_n

    def cluster_coord(self, rank) -> tuple:
        """``(rank_m, rank_n)``: the coordinate of cluster rank ``rank`` (IR or int) in CuTe's
        cluster layout ``(cluster_m, cluster_n) : (1, cluster_m)`` -- ``(rank % cluster_m,
        rank / cluster_m)``, with the trivial mode 0 (no arithmetic for a 1-D cluster)."""
        cm, cn = self.cluster_m, self.cluster_n
        rank_m = 0 if cm == 1 else rank if cn == 1 else rank % cm
        rank_n = 0 if cn == 1 else rank if cm == 1 else ir.floordiv(rank, cm)
        return rank_m, rank_n

    @property
    def units_per_group(self) -> int:
        return max(1, self.group // (self.cluster_m if self.raster == "m" else self.cluster_n))

    # ------------------------------------------------------------------ unit counts

    def num_units(self, num_m: Node, num_n: Node, L: Node, splits_k: Node | None = None) -> Node:
        """Units of the whole problem: ``ceil(num_m / cluster_m) * ceil(num_n / cluster_n) * L
        [* splits_k]``."""
        n = _ceil(num_m, self.cluster_m) * _ceil(num_n, self.cluster_n) * L
        return n * splits_k if self.splits else n

    def first_unit(self, block: Node) -> Node:
        """The persistent loop's first unit of the CTA ``block`` (its cluster's index)."""
        return ir.floordiv(block, self.cluster_size)

    def unit_step(self, grid: Node) -> Node:
        """The persistent loop's step: clusters in the grid."""
        return ir.floordiv(grid, self.cluster_size)

    def grid_unit(self, block: Node) -> Node:
        """Grid-based (non-persistent) kernels: the unit of CTA ``block`` (one per unit)."""
        return self.first_unit(block)

    # ------------------------------------------------------------------ the mapping

    def program(self, unit: Node, num_m: Node, num_n: Node, *, rank: Node | int = 0,
                splits_k: Node | None = None, k_blocks: Node | None = None,
                out: Outputs = Outputs()) -> list:
        """The steps mapping ``unit`` to the outputs (``rank``: the CTA's rank in its cluster,
        ``splits_k`` / ``k_blocks``: with ``splits``)."""
        steps: list = []

        def bind(name, node, lo=None, hi=None, is_out=False):
            node = ir.as_node(node)
            steps.append(Step(name, node, is_out))
            lo = node.lo if lo is None else lo
            hi = node.hi if hi is None else hi
            return ir.var(name, lo, min(hi, _I32))

        tile = unit
        if self.splits:
            if splits_k is None or k_blocks is None:
                raise ValueError("TileScheduler: split-K units need splits_k and k_blocks")
            tile = bind("ktile_", ir.floordiv(unit, splits_k))
            split = bind(out.split, _rem(unit, tile, splits_k), 0, splits_k.hi - 1, is_out=True)
            bind(out.kb_lo, ir.floordiv(k_blocks * split, splits_k), 0, k_blocks.hi,
                 is_out=True)
            bind(out.kb_hi, ir.floordiv(k_blocks * (split + 1), splits_k), 0, k_blocks.hi,
                 is_out=True)
        cm, cn, G = self.cluster_m, self.cluster_n, self.units_per_group
        if cm > 1:
            num_m = bind("num_mc_", _ceil(num_m, cm))
        if cn > 1:
            num_n = bind("num_nc_", _ceil(num_n, cn))
        # "major": the mode the groups are cut along; "minor": the other one
        major, minor = (num_m, num_n) if self.raster == "m" else (num_n, num_m)
        # the kernel's unit counter is an int: the host keeps num_units < 2**31, so the
        # product (computed in 64 bits when the bounds of num_m, num_n do not say so) fits
        if self.batched:
            per_l = bind("per_l_", num_m * num_n, 1, _I32)
            l_ = bind(out.l, ir.floordiv(tile, per_l), is_out=True)
            r = bind("r_", _rem(tile, l_, per_l), 0, per_l.hi - 1)
        else:
            r = tile
        gw = bind("gw_", minor * G, G, _I32)
        g = bind("g_", ir.floordiv(r, gw))
        first = bind("first_", g * G, 0, major.hi - 1)    # g * G < major: r < per_l
        gs = bind("gs_", ir.select(ir.lt(major - first, G), major - first, G), 1, G)
        rr = bind("rr_", _rem(r, g, gw), 0, gw.hi - 1)
        along = first + rr % gs
        across = ir.floordiv(rr, gs)
        m_u, n_u = (along, across) if self.raster == "m" else (across, along)
        rank_m, rank_n = self.cluster_coord(ir.as_node(rank))
        bind(out.m, m_u * cm + rank_m if cm > 1 else m_u, is_out=True)
        bind(out.n, n_u * cn + rank_n if cn > 1 else n_u, is_out=True)
        return steps

    def emit(self, kb, unit: Node, num_m: Node, num_n: Node, **kw) -> None:
        """Declare the program's steps in the builder ``kb`` (``const int`` locals; the
        outputs are assigned to the kernel's variables, see :class:`Outputs`)."""
        for s in self.program(unit, num_m, num_n, **kw):
            if s.out:
                kb.assign(s.name, s.node)
            else:
                kb.decl("const int", s.name, s.node, hint=False)


def _ceil(x: Node, c: int) -> Node:
    """``ceil(x / c)`` (``x`` itself for ``c == 1``)."""
    return x if c == 1 else ir.floordiv(x + (c - 1), c)


def _rem(x: Node, q: Node, d: Node) -> Node:
    """``x - q * d`` for the bound quotient ``q = x // d``: the remainder without a second
    division (nvcc does not fuse a signed ``/`` and ``%``: this form saves a division
    sequence).  The product may render in 64 bits when the bounds of ``q`` and ``d`` do not
    show it fits; the result, in ``[0, d)``, is narrowed exactly."""
    return x - q * d


def run(steps, env: dict) -> dict:
    """Evaluate a program (NumPy arrays or ints in ``env``); returns ``env`` with every step's
    name bound."""
    env = dict(env)
    for s in steps:
        env[s.name] = ir.evaluate(s.node, env)
    return env


def model(sched: TileScheduler, num_m: int, num_n: int, L: int, splits_k: int = 1,
          k_blocks: int = 0) -> list:
    """Plain-Python statement of the visiting order (the specification the emitted IR is
    tested against): the list, indexed by unit, of ``(m_unit, n_unit, l, split, kb_lo, kb_hi)``
    built by walking batches, then groups, then the group's columns (rows), then its rows
    (columns); ``m_unit`` / ``n_unit`` are the cluster units (the CTA of rank r takes the tile
    ``(m_unit * cluster_m + r % cluster_m, n_unit * cluster_n + r // cluster_m)``)."""
    G = sched.units_per_group
    mc, nc = -(-num_m // sched.cluster_m), -(-num_n // sched.cluster_n)
    major, minor = (mc, nc) if sched.raster == "m" else (nc, mc)
    order = []
    for l_ in range(L):
        for g0 in range(0, major, G):
            for b in range(minor):
                for a in range(g0, min(g0 + G, major)):
                    m_u, n_u = (a, b) if sched.raster == "m" else (b, a)
                    order.append((m_u, n_u, l_))
    if not sched.splits:
        return [t + (0, 0, k_blocks) for t in order]
    return [t + (s, k_blocks * s // splits_k, k_blocks * (s + 1) // splits_k)
            for t in order for s in range(splits_k)]
