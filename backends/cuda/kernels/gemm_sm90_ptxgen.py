"""Generator of the ``wgmma.mma_async`` wrapper block of ``cute_py/ptx_sm90.cuh``.

The wrappers list every accumulator register as an inline-asm operand (up to 128 for
``m64n256``), which is text nobody should type by hand; this generates it.  The block in the
header lies between ``// BEGIN GENERATED WGMMA`` and ``// END GENERATED WGMMA``; a test checks
the header holds exactly ``wgmma_block()``.
"""

from __future__ import annotations

__all__ = ["wgmma_block", "WGMMA_N", "FP8_FORMATS", "fp8_wgmma_block"]

#: N extents that have wrappers: every N wgmma takes for 16-bit inputs (multiples of 8 up to
#: 256), so any tile_n a kernel or a user composition picks has its wrapper in the header
WGMMA_N = tuple(range(8, 257, 8))

#: 8-bit input formats of ``wgmma ... k32`` (A and B may differ)
FP8_FORMATS = ("e4m3", "e5m2")


def wgmma_block() -> str:
    out = []
    for ab in ("f16", "bf16"):
        for n in WGMMA_N:
            nr = n // 2
            regs = ", ".join(f"%{i}" for i in range(nr))
            outs = ", ".join(f'"+f"(d[{i}])' for i in range(nr))
            out.append(f"""// wgmma.mma_async m64n{n}k16 f32 += {ab} x {ab}, A and B from shared-memory descriptors.
// d: the {nr} f32 accumulators of CLayout_64x{n}; scale_d = 0 overwrites d (first k-block).
template <int TransA, int TransB>
CUTE_PY_DEVICE void wgmma_m64n{n}k16_f32_{ab}_ss(float (&d)[{nr}], u64 desc_a, u64 desc_b,
                                              int scale_d) {{
  asm volatile(
      "{{\\n .reg .pred p;\\n setp.ne.b32 p, %{nr + 2}, 0;\\n"
      " wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ab}.{ab} {{{regs}}}, %{nr}, %{nr + 1}, p, 1, 1, %{nr + 3}, %{nr + 4};\\n}}\\n"
      : {outs}
      : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TransA), "n"(TransB));
}}
""")
            out.append(f"""// wgmma.mma_async m64n{n}k16 f32 += {ab} x {ab}, A from registers (ALayout_64x16: 4 x {ab}x2),
// B from a shared-memory descriptor.
template <int TransB>
CUTE_PY_DEVICE void wgmma_m64n{n}k16_f32_{ab}_rs(float (&d)[{nr}], u32 a0, u32 a1, u32 a2, u32 a3,
                                              u64 desc_b, int scale_d) {{
  asm volatile(
      "{{\\n .reg .pred p;\\n setp.ne.b32 p, %{nr + 5}, 0;\\n"
      " wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ab}.{ab} {{{regs}}}, {{%{nr}, %{nr+1}, %{nr+2}, %{nr+3}}}, %{nr + 4}, p, 1, 1, %{nr + 6};\\n}}\\n"
      : {outs}
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc_b), "r"(scale_d), "n"(TransB));
}}
""")
    return "\n".join(out) + "\n" + fp8_wgmma_block()


def fp8_wgmma_block() -> str:
    """``wgmma.mma_async.m64n{N}k32.f32.{a}.{b}`` wrappers, A and B from descriptors, for every
    N and every pair of 8-bit formats: 8-bit operands are K-major only (no transpose
    immediates, no template)."""
    out = []
    for a in FP8_FORMATS:
        for b in FP8_FORMATS:
            for n in WGMMA_N:
                nr = n // 2
                regs = ", ".join(f"%{i}" for i in range(nr))
                outs = ", ".join(f'"+f"(d[{i}])' for i in range(nr))
                out.append(f"""// wgmma.mma_async m64n{n}k32 f32 += {a} x {b}, A and B K-major from shared-memory descriptors.
// d: the {nr} f32 accumulators of CLayout_64x{n}; scale_d = 0 overwrites d.
CUTE_PY_DEVICE void wgmma_m64n{n}k32_f32_{a}_{b}_ss(float (&d)[{nr}], u64 desc_a, u64 desc_b,
                                              int scale_d) {{
  asm volatile(
      "{{\\n .reg .pred p;\\n setp.ne.b32 p, %{nr + 2}, 0;\\n"
      " wgmma.mma_async.sync.aligned.m64n{n}k32.f32.{a}.{b} {{{regs}}}, %{nr}, %{nr + 1}, p, 1, 1;\\n}}\\n"
      : {outs}
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}}
""")
    return "\n".join(out)
