"""The accumulator fragment the GEMM hands to the epilogue, and what the epilogue derives from it.

A fragment is a thread-value map ``(t, v) -> (m, n)`` inside the CTA tile (CuTe's TV layout of
``TiledMMA::partition_C``).  The epilogue needs it in *separable* form,
``m = m_thr(t) + m_val[v]``, ``n = n_thr(t) + n_val[v]``, so that each value's position is a
compile-time constant plus one per-thread offset; :func:`fragment_from_tv` checks this by
enumerating every (t, v).  From the fragment the emitter derives, per epilogue subtile, which
values fall in it (must not depend on the thread), whether ``stmatrix`` fits (each warp holds
8x8 blocks the way an MMA accumulator does), and the lane masks for shuffle reductions.
"""

from __future__ import annotations

from dataclasses import dataclass

from cute_py.errors import LayoutError

__all__ = ["AccFragment", "fragment_from_tv", "wgmma_fragment", "mma_sm80_fragment",
           "bank_wavefronts", "value_pairs"]


@dataclass(frozen=True)
class AccFragment:
    """``num_threads`` threads, each holding ``len(m_val)`` float accumulators.

    ``m_thr``/``n_thr``: per-thread offsets (tuples, one entry per thread); ``m_val``/``n_val``:
    per-value offsets.  ``thr_expr`` is C++ computing ``(m_thr, n_thr)`` from ``tid`` (the
    consumer thread index); it must agree with the tables (checked by tests)."""

    num_threads: int
    m_thr: tuple
    n_thr: tuple
    m_val: tuple
    n_val: tuple
    m_thr_expr: str
    n_thr_expr: str

    @property
    def num_values(self) -> int:
        return len(self.m_val)

    def coord(self, t: int, v: int) -> tuple[int, int]:
        return self.m_thr[t] + self.m_val[v], self.n_thr[t] + self.n_val[v]

    def values_in(self, m0, m1, n0, n1) -> list[int]:
        """Values v whose element lies in rows [m0, m1) x cols [n0, n1) for every thread;
        raises LayoutError if membership depends on the thread."""
        out = []
        for v in range(self.num_values):
            ins = {m0 <= self.m_thr[t] + self.m_val[v] < m1 and n0 <= self.n_thr[t] + self.n_val[v]
                   < n1 for t in range(self.num_threads)}
            if len(ins) != 1:
                raise LayoutError("epilogue", "epilogue_tile", "splits one accumulator value "
                                  "across subtiles depending on the thread; choose an "
                                  "EpilogueTile aligned to the MMA layout",
                                  actual=(m0, m1, n0, n1))
            if ins.pop():
                out.append(v)
        return out

    def mma_warp_pattern(self) -> bool:
        """True when in every warp lane l sits at (base + l//4, base + 2*(l%4)) — the 8x8-block
        layout of an MMA accumulator, which ``stmatrix``/``ldmatrix`` write/read."""
        if self.num_threads % 32:
            return False
        for t in range(self.num_threads):
            w = t - t % 32
            lane = t % 32
            if self.m_thr[t] - self.m_thr[w] != lane // 4 or \
                    self.n_thr[t] - self.n_thr[w] != 2 * (lane % 4):
                return False
        return True

    def shuffle_masks(self, axis: str) -> list[int]:
        """Lane xor-masks that keep a thread's column (``axis='n'``: lanes holding other rows of
        the same columns) or row (``axis='m'``)."""
        key = self.n_thr if axis == "n" else self.m_thr
        masks = []
        for b in range(5):
            if all(key[t] == key[t ^ (1 << b)] for t in range(self.num_threads)):
                masks.append(1 << b)
        return masks


def fragment_from_tv(tv, tile_m: int, num_threads: int, num_values: int,
                     m_thr_expr: str, n_thr_expr: str) -> AccFragment:
    """Build an :class:`AccFragment` from a callable ``tv(t, v) -> idx`` (a CuTe TV layout over
    a column-major ``tile_m x tile_n`` tile: ``m = idx % tile_m``, ``n = idx // tile_m``).

    Raises :class:`LayoutError` if the map is not separable into thread and value offsets."""
    coords = [[divmod(int(tv(t, v)), tile_m)[::-1] for v in range(num_values)]
              for t in range(num_threads)]
    m_thr = tuple(coords[t][0][0] for t in range(num_threads))
    n_thr = tuple(coords[t][0][1] for t in range(num_threads))
    m_val = tuple(coords[0][v][0] - m_thr[0] for v in range(num_values))
    n_val = tuple(coords[0][v][1] - n_thr[0] for v in range(num_values))
    for t in range(num_threads):
        for v in range(num_values):
            if coords[t][v] != (m_thr[t] + m_val[v], n_thr[t] + n_val[v]):
                raise LayoutError("fragment_from_tv", "tv", "is not separable into a thread "
                                  "offset plus a value offset", actual=(t, v, coords[t][v]))
    return AccFragment(num_threads, m_thr, n_thr, m_val, n_val, m_thr_expr, n_thr_expr)


def wgmma_fragment(num_warpgroups: int, tile_n: int, m_per_wg: int = 64) -> AccFragment:
    """The accumulator of ``num_warpgroups`` consumer warpgroups stacked along M, each issuing
    ``wgmma.m64n{tile_n}`` (``m_per_wg // 64`` times along M): CuTe's
    ``CLayout_64xN = ((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))`` per 64 rows."""
    mi = m_per_wg // 64
    tile_m = m_per_wg * num_warpgroups

    def tv(t, v):
        wg, r = divmod(t, 128)
        t0, t1, t2 = r % 4, (r // 4) % 8, r // 32
        v0, v1 = v % 2, (v // 2) % 2
        v2 = (v // 4) % (tile_n // 8)
        vm = v // (4 * (tile_n // 8))
        m = wg * m_per_wg + vm * 64 + t1 + 16 * t2 + 8 * v1
        n = 2 * t0 + v0 + 8 * v2
        return m + tile_m * n

    return fragment_from_tv(
        tv, tile_m, 128 * num_warpgroups, 4 * (tile_n // 8) * mi,
        f"((tid >> 7) * {m_per_wg} + ((tid & 127) >> 5) * 16 + ((tid & 31) >> 2))",
        "((tid & 3) * 2)")


def mma_sm80_fragment(warps_m: int, warps_n: int, warp_tile_m: int, warp_tile_n: int
                      ) -> AccFragment:
    """The accumulator of ``mma.sync.m16n8k16`` with ``warps_m x warps_n`` warps (warp index
    m-fastest), each covering ``warp_tile_m x warp_tile_n`` (values: (2,2) per atom, atoms
    m-fastest then n)."""
    am, an = warp_tile_m // 16, warp_tile_n // 8
    tile_m = warps_m * warp_tile_m

    def tv(t, v):
        w, lane = divmod(t, 32)
        wm, wn = w % warps_m, w // warps_m
        v0, v1 = v % 2, (v // 2) % 2
        a = v // 4
        im, in_ = a % am, a // am
        m = wm * warp_tile_m + im * 16 + lane // 4 + 8 * v1
        n = wn * warp_tile_n + in_ * 8 + 2 * (lane % 4) + v0
        return m + tile_m * n

    return fragment_from_tv(
        tv, tile_m, 32 * warps_m * warps_n, 4 * am * an,
        f"(((tid >> 5) % {warps_m}) * {warp_tile_m} + ((tid & 31) >> 2))",
        f"(((tid >> 5) / {warps_m}) * {warp_tile_n} + (tid & 3) * 2)")


def bank_wavefronts(byte_addrs, access_bytes: int) -> int:
    """Shared-memory wavefronts one warp-wide access needs (32 banks x 4 bytes): accesses are
    split into phases of 128 bytes of requests (8 lanes for 16 B, 16 for 8 B, 32 for 4 B); in a
    phase, distinct 4-byte words in one bank serialise."""
    lanes_per_phase = max(1, 128 // access_bytes)
    total = 0
    addrs = list(byte_addrs)
    for p in range(0, len(addrs), lanes_per_phase):
        banks: dict[int, set] = {}
        for a in addrs[p:p + lanes_per_phase]:
            for w in range(0, access_bytes, 4):
                word = (a + w) // 4
                banks.setdefault(word % 32, set()).add(word)
        total += max(len(s) for s in banks.values())
    return total


def value_pairs(fr: "AccFragment", vals):
    """``(pairs, singles)``: the values ``vals`` of one thread grouped 2-wide where two are
    adjacent in n (``(v, w)`` with the same row, ``n(w) = n(v) + 1``, ``n(v)`` even and every
    thread's column origin even, so the pair is one aligned 2-element access); the rest single.
    Law: every value of ``vals`` is in exactly one pair or single."""
    thr_even = all(n % 2 == 0 for n in fr.n_thr)
    used, pairs, singles = set(), [], []
    for v in vals:
        if v in used:
            continue
        w = next((w for w in vals if w not in used and w != v and fr.m_val[w] == fr.m_val[v]
                  and fr.n_val[w] == fr.n_val[v] + 1), None)
        if thr_even and fr.n_val[v] % 2 == 0 and w is not None:
            pairs.append((v, w))
            used |= {v, w}
        else:
            singles.append(v)
            used.add(v)
    return pairs, singles
