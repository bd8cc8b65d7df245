"""Element types: one table of names and widths for the whole package (CuTe's ``numeric_types``).

``canonical_type`` maps every accepted spelling (``"f16"``, ``"half_t"``, ``numpy.float16``, a
NumPy dtype) to one canonical name (``"float16"``); ``sizeof_bits`` gives its width
(``sizeof_bits<T>``). Modules that need other per-type facts (C types, NumPy dtypes, PTX
suffixes) key them by these canonical names.

Laws: ``canonical_type(canonical_type(t)) == canonical_type(t)``;
``sizeof_bits(t) == sizeof_bits(canonical_type(t))``.
"""

from __future__ import annotations

from .errors import AtomError

__all__ = ["BITS", "BYTES", "ALIASES", "PTX", "CUTE_NAME", "C_STORAGE", "NUMPY_HOLDER",
           "canonical_type", "sizeof_bits"]

#: canonical element type name -> width in bits
BITS = {
    "float16": 16, "bfloat16": 16, "float32": 32, "tfloat32": 32, "float64": 64,
    "int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32,
    "int64": 64, "uint64": 64, "uint128": 128, "float8_e4m3": 8, "float8_e5m2": 8,
    "int4": 4, "uint4": 4, "float4_e2m1": 4, "uint1": 1,
}

#: canonical name -> width in bytes (the types of at least one byte)
BYTES = {t: b // 8 for t, b in BITS.items() if b % 8 == 0}

#: canonical name -> PTX type suffix (``mma.sync...f32.f16.f16.f32``)
PTX = {
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "tfloat32": "tf32", "float64": "f64",
    "int8": "s8", "uint8": "u8", "int16": "s16", "uint16": "u16", "int32": "s32", "uint32": "u32",
    "int64": "s64", "uint64": "u64", "float8_e4m3": "e4m3", "float8_e5m2": "e5m2",
}

#: canonical name -> the spelling in CuTe's atom names (``SM80_16x8x16_F32F16F16F32_TN``)
CUTE_NAME = {
    "float16": "F16", "bfloat16": "BF16", "float32": "F32", "tfloat32": "TF32", "float64": "F64",
    "int8": "S8", "uint8": "U8", "int32": "S32", "float8_e4m3": "E4M3", "float8_e5m2": "E5M2",
}

#: canonical name -> C type generated code stores it in (16-bit floats as raw bits)
C_STORAGE = {
    "float16": "unsigned short", "bfloat16": "unsigned short", "float32": "float",
    "float64": "double", "int8": "signed char", "uint8": "unsigned char", "int16": "short",
    "uint16": "unsigned short", "int32": "int", "uint32": "unsigned int",
}

#: canonical name -> NumPy dtype that holds its values exactly in the CPU model (no NumPy
#: bfloat16/tfloat32: they are held, already rounded, in float32)
NUMPY_HOLDER = {
    "float16": "float16", "bfloat16": "float32", "tfloat32": "float32", "float32": "float32",
    "float64": "float64", "int8": "int8", "uint8": "uint8", "int32": "int32", "uint32": "uint32",
}

#: other spellings (C++, PTX, NumPy, CUTLASS) -> canonical name; looked up case-insensitively
ALIASES = {
    "f16": "float16", "fp16": "float16", "half": "float16", "half_t": "float16",
    "bf16": "bfloat16", "bfloat16_t": "bfloat16",
    "f32": "float32", "fp32": "float32", "float": "float32",
    "tf32": "tfloat32", "tfloat32_t": "tfloat32",
    "f64": "float64", "fp64": "float64", "double": "float64",
    "s8": "int8", "i8": "int8", "int8_t": "int8", "u8": "uint8", "uint8_t": "uint8",
    "s16": "int16", "i16": "int16", "int16_t": "int16", "u16": "uint16", "uint16_t": "uint16",
    "s32": "int32", "i32": "int32", "int32_t": "int32", "u32": "uint32", "uint32_t": "uint32",
    "s64": "int64", "i64": "int64", "int64_t": "int64", "u64": "uint64", "uint64_t": "uint64",
    "u128": "uint128", "uint128_t": "uint128",
    "e4m3": "float8_e4m3", "float_e4m3_t": "float8_e4m3", "float8_e4m3fn": "float8_e4m3",
    "f8": "float8_e4m3", "fp8": "float8_e4m3",
    "e5m2": "float8_e5m2", "float_e5m2_t": "float8_e5m2",
    "int4_t": "int4", "s4": "int4", "uint4_t": "uint4", "u4": "uint4",
    "e2m1": "float4_e2m1", "float_e2m1_t": "float4_e2m1",
    "uint1_t": "uint1", "b1": "uint1", "bit": "uint1",
}


def canonical_type(t, op: str = "canonical_type", arg: str = "type",
                   error: type = AtomError) -> str:
    """The canonical name of an element type: ``"f16"``, ``"half_t"``, ``numpy.float16`` ->
    ``"float16"``. Accepts NumPy dtypes and scalar types by their ``name``. Raises ``error``
    naming ``op`` and ``arg`` for anything else (``None`` included)."""
    name = t
    if t is not None and not isinstance(t, str):
        name = getattr(t, "name", None) or getattr(t, "__name__", None)
        if name is None:
            try:  # numpy scalar types such as np.float16; numpy is imported only here
                import numpy as np
                name = np.dtype(t).name
            except Exception:  # noqa: BLE001 - anything unreadable is reported below
                name = None
    if isinstance(name, str):
        key = name.strip()
        key = ALIASES.get(key, ALIASES.get(key.lower(), key.lower()))
        if key in BITS:
            return key
    raise error(op, arg, "is not a known element type", expected=sorted(BITS), actual=repr(t))


def sizeof_bits(t) -> int:
    """Width of an element type in bits (CuTe's ``sizeof_bits<T>``): ``sizeof_bits("half_t") ==
    16``. A positive int is taken as a width already; objects with an int ``width`` or ``bits``
    (CuTe-like numeric types) give it."""
    if isinstance(t, int) and not isinstance(t, bool):
        if t < 1:
            raise AtomError("sizeof_bits", "t", "must be a positive number of bits", actual=t)
        return t
    if not isinstance(t, str) and t is not None:
        for attr in ("width", "bits"):
            v = getattr(t, attr, None)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v
    return BITS[canonical_type(t, "sizeof_bits", "t")]

