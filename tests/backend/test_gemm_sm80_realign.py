"""Realigned 16-byte copies of the SM80 GEMM (no GPU): 16-bit operands whose rows are aligned
only to their element (odd K, a view starting one element in) are read as 16-byte vectors --
the two aligned vectors holding each one, shifted into place at the shared store -- instead of
one element at a time.

Laws: ``realigned`` turns exactly the 1-element copies of 16-bit operands into realigned
16-byte copies (never an aligned operand's, never fp32's); the byte selection of
``st_chunk_realign`` (select by 8, by 4 bytes, then a funnel shift by the 2-byte rest) returns
bytes ``[off, off + 16)`` of the 32 loaded, for every even offset; the generated kernel stages
9 words per realigned copy and uses the realigned helpers only for the operands that take them.
"""

from dataclasses import replace

import numpy as np
import pytest

from cute_py.errors import AtomError
from backends.cuda.arch.sm80.copy import CopyIssue
from backends.cuda.kernels import gemm_sm80 as S
from backends.cuda.kernels.gemm_sm80_config import GemmSm80Config, kernel_name
from backends.cuda.kernels.gemm_sm80_configs import REALIGNED_WIDE_FLOP, default_config


def _plain(M, N, K, a_str, b_str, pa=1 << 20, pb=1 << 22, dtype="f16"):
    eb = 4 if dtype == "tf32" else 2
    out = "f32" if dtype == "tf32" else dtype
    base, va, vb = S.operand_config(pa, a_str, pb, b_str, M, N, K, eb, None, None, dtype, out)
    return S.plain_config(base, va, vb, [(1 << 24, N, M * N)] * 2, 2)


def test_odd_pitch_operands_take_realigned_copies():
    M, N, K = 1000, 777, 333
    cfg = _plain(M, N, K, (M * K, K, 1), (K * N, N, 1))            # A (M, K), B (K, N) row-major
    assert (cfg.vec_a, cfg.vec_b, cfg.realign_a, cfg.realign_b) == (8, 8, True, True)
    assert kernel_name(cfg).endswith("uab_r8")
    # B aligned (ld 784): only A is realigned; B keeps its asynchronous 16-byte copies
    cfg = _plain(M, 784, K, (M * K, K, 1), (K * 784, 784, 1))
    assert (cfg.realign_a, cfg.realign_b, cfg.vec_b) == (True, False, 8)
    # a view one element into aligned rows: the pointer is off, so A is realigned too
    cfg = _plain(M, 784, 336, (M * 344, 344, 1), (336 * 784, 784, 1), pa=(1 << 20) + 2)
    assert cfg.realign_a and not cfg.realign_b
    # 4-byte aligned rows keep their cp.async 4-byte copies (no register staging)
    cfg = _plain(M, 784, 334, (M * 334, 334, 1), (334 * 784, 784, 1))
    assert (cfg.vec_a, cfg.realign_a) == (2, False)
    # fp32 is never realigned (cp.async moves 4-byte elements)
    cfg = _plain(M, N, K, (M * K, K, 1), (K * N, N, 1), dtype="tf32")
    assert not (cfg.realign_a or cfg.realign_b)


def test_realigned_tile_by_problem_size():
    small = default_config(1000, 777, 333, aligned=False)
    wide = default_config(2000, 1000, 333, aligned=False)
    assert 2 * 1000 * 777 * 333 < REALIGNED_WIDE_FLOP <= 2 * 2000 * 1000 * 333
    assert small.tile == (64, 64, 32) and wide.tile == (128, 128, 32) and wide.warps == (2, 4)
    assert default_config(2000, 1000, 333, aligned=False, dtype="tf32",
                          out_dtype="f32").tile == (64, 64, 32)
    assert default_config(2000, 1000, 333, aligned=False, mainloop="pipelined").tile[:2] == \
        (64, 64)


def test_bad_realign_fields_name_themselves():
    base = GemmSm80Config(tile=(64, 64, 32), warps=(2, 2), stages=3)
    with pytest.raises(AtomError) as e:
        replace(base, vec_a=4, realign_a=True).check()
    assert "realign_a" in str(e.value)
    with pytest.raises(AtomError) as e:
        replace(base, dtype="tf32", out_dtype="f32", vec_a=4, vec_b=4, realign_b=True).check()
    assert "realign_b" in str(e.value)
    with pytest.raises(AtomError) as e:
        replace(base, realign_a=1).check()
    assert "realign_a" in str(e.value)


def _select(w, off):
    """The byte selection of st_chunk_realign, in NumPy (u32 words, little-endian)."""
    w = [int(x) for x in w]
    sh = (off & 3) * 8
    u = [w[j + 2] if off & 8 else w[j] for j in range(6)]
    x = [u[j + 1] if off & 4 else u[j] for j in range(5)]
    return [(((x[i + 1] << 32) | x[i]) >> sh) & 0xFFFFFFFF for i in range(4)]


@pytest.mark.parametrize("off", range(0, 16, 2))
def test_realign_selection_returns_the_chunk(off):
    rng = np.random.default_rng(off)
    raw = rng.integers(0, 256, 32, dtype=np.uint8)
    if off == 0:
        raw[16:] = 0                       # the second vector is not read at offset 0
    words = raw.view("<u4")
    got = np.array(_select(words, off), dtype="<u4").view(np.uint8)
    assert np.array_equal(got, raw[off:off + 16])


def test_generated_kernel_stages_raw_vectors():
    cfg = _plain(1000, 784, 333, (1000 * 333, 333, 1), (333 * 784, 784, 1))
    src = S.generate_source(cfg)
    assert "ld_chunk_realign<8>(ga0" in src and "st_chunk_realign<16>(sA" in src
    assert "ld_chunk_realign<8>(gb" not in src and "cp_async_zfill<16>(sB" in src
    assert "u32 ga0[9]" in src
    issue = CopyIssue("A", "K", 8, 2, 4096, None, (), 3, True)
    assert issue.synchronous and issue.words == 9
    assert CopyIssue("A", "K", 8, 2, 4096, None, (), 3).words == 4
    # aligned kernels do not carry the realigned helpers
    assert "realign" not in S.generate_source(replace(cfg, realign_a=False))
