"""Card sets as uint64 bits and the state buffer's typed views: the compiled helpers every kernel uses.

Card sets are ``uint64`` with bit ``card`` per member; ``popcount``, ``lowest_card`` and ``highest_card``
are single instructions; the byte stores write a card set as 52 bytes of 0/1 (a mask or an observation
piece) without a loop. With ``NUMBA_DISABLE_JIT=1`` every helper here is plain Python.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import config, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

ZERO = np.uint64(0)
ONE = np.uint64(1)


@njit(cache=True, inline="always")
def typed_views(buf):
    """The state buffer as each dtype its fields use: (u8, i8, i16, i32, i64, u64, f32). Field ``F`` of game
    ``g`` (seat ``s``) is ``view[eo[F] + g]`` (``view[eo[F] + g * n + s]``), ``eo`` the element offsets of
    :attr:`pedro_env.state.PedroState.element_offsets`; bool fields are read through u8."""
    return (
        buf,
        buf.view(np.int8),
        buf.view(np.int16),
        buf.view(np.int32),
        buf.view(np.int64),
        buf.view(np.uint64),
        buf.view(np.float32),
    )


if config.DISABLE_JIT:  # plain Python: reads give Python ints, so small dtypes do not wrap in index arithmetic

    class _PythonView:
        """An integer view of the state buffer whose scalar reads are Python ints (numba widens them too)."""

        def __init__(self, array):
            self.array = array
            self.shape = array.shape

        def __getitem__(self, key):
            value = self.array[key]
            return _PythonView(value) if isinstance(value, np.ndarray) else int(value)

        def __setitem__(self, key, value):
            self.array[key] = value

    _compiled_typed_views = typed_views

    def typed_views(buf):
        views = _compiled_typed_views(buf)
        return (*(_PythonView(view) for view in views[:6]), views[6])


def _bit_intrinsic(name):
    """A compiled ``llvm.<name>`` (ctpop, cttz) of a uint64, as an int64 (one instruction on x86-64 and arm64)."""

    @intrinsic
    def bit_count(typingctx, x):
        def codegen(context, builder, signature, args):
            (value,) = args
            flag = [ir.IntType(1)] if name in ("cttz", "ctlz") else []  # is a zero input poison (no: 0)
            function_type = ir.FunctionType(value.type, [value.type, *flag])
            function = cgutils.get_or_insert_function(builder.module, function_type, f"llvm.{name}.i64")
            return builder.call(function, [value, *(ir.Constant(t, 0) for t in flag)])

        return types.int64(types.uint64), codegen

    return bit_count


if config.DISABLE_JIT:  # plain Python, for a debugger

    def popcount(x):
        """Number of set bits of a uint64."""
        return int(x).bit_count()

    def lowest_card(x):
        """Index of the lowest set bit of a nonzero uint64 (the lowest card of a card set)."""
        return (int(x) & -int(x)).bit_length() - 1

    def _leading_zeros(x):
        return 64 - int(x).bit_length()

else:
    popcount = _bit_intrinsic("ctpop")
    lowest_card = _bit_intrinsic("cttz")
    _leading_zeros = _bit_intrinsic("ctlz")


@njit(cache=True, _nrt=False, inline="always")
def highest_card(x):
    """Index of the highest set bit of a nonzero uint64 (the highest card id of a card set)."""
    return 63 - _leading_zeros(x)


def bits_as_bytes_store(width):
    """A compiled ``store(out, g, start, bits)``: the low ``width`` bits of uint64 ``bits`` as ``width`` bytes of
    0/1 into ``out[g, start : start + width]`` (C-contiguous 2D bytes, uint8 or bool; byte ``i`` = bit ``i``): the
    bits as a mask of 64 lanes widened to bytes (one masked move with AVX-512, a few shuffles with AVX2), and
    one store of ``width`` bytes; no bounds check."""
    if config.DISABLE_JIT:  # plain Python, for a debugger

        def store(out, g, start, bits):
            out[g, start : start + width] = [(int(bits) >> i) & 1 for i in range(width)]

        return store

    @intrinsic
    def store(typingctx, out, g, start, bits):
        def codegen(context, builder, signature, args):
            array = context.make_array(signature.args[0])(context, builder, args[0])
            row_stride = cgutils.unpack_tuple(builder, array.strides)[0]
            offset = builder.add(builder.mul(args[1], row_stride), args[2])
            lanes = builder.bitcast(args[3], ir.VectorType(ir.IntType(1), 64))
            as_bytes = builder.zext(lanes, ir.VectorType(ir.IntType(8), 64))
            first = ir.Constant(ir.VectorType(ir.IntType(32), width), list(range(width)))
            piece = builder.shuffle_vector(as_bytes, ir.Constant(as_bytes.type, None), first)
            pointer = builder.bitcast(builder.gep(array.data, [offset]), piece.type.as_pointer())
            builder.store(piece, pointer, align=1)
            return context.get_dummy_value()

        return types.void(out, types.intp, types.intp, types.uint64), codegen

    return store


store_card_bytes = bits_as_bytes_store(52)  # a card set as a 52-byte piece
store_suit_bytes = bits_as_bytes_store(4)  # a 4-bit suit set (voids) as 4 bytes
_store_64_bytes = bits_as_bytes_store(64)


@njit(cache=True, _nrt=False, inline="always")
def zero_bytes(out, g, start, length):
    """Zero ``out[g, start : start + length]`` (bytes) with 64-byte stores, the last one overlapping the one
    before it (instead of a call to memset)."""
    if length < 64:
        out[g, start : start + length] = 0
        return
    end = start + length - 64
    while start < end:
        _store_64_bytes(out, g, start, ZERO)
        start += 64
    _store_64_bytes(out, g, end, ZERO)


@njit(cache=True, inline="always")
def seat_after(seat, steps, n):
    """``(seat + steps) % n`` for seat in 0..n-1 and steps in 0..n (no division: this sits in every loop)."""
    later = seat + steps
    return later - n if later >= n else later


@njit(cache=True, inline="always")
def seat_from(seat, viewer, n):
    """``(seat - viewer) % n``, the seat relative to ``viewer``, for both in 0..n-1."""
    relative = seat - viewer
    return relative + n if relative < 0 else relative


@njit(cache=True, inline="always")
def card_bit(card):
    return ONE << np.uint64(card)


def _bytes_as_bits_load(width):
    """A compiled ``load(array, g, start)``: ``array[g, start : start + width]`` (C-contiguous 2D bytes, uint8 or
    bool) as the low ``width`` bits of a uint64, bit ``i`` set where byte ``i`` is nonzero (the reverse of
    :func:`bits_as_bytes_store`): one load of ``width`` bytes compared with zero into a lane mask (a few
    byte compares and mask moves); no bounds check."""
    if config.DISABLE_JIT:  # plain Python, for a debugger

        def load(array, g, start):
            bits = 0
            for i in range(width):
                if array[g, start + i]:
                    bits |= 1 << i
            return np.uint64(bits)

        return load

    @intrinsic
    def load(typingctx, array, g, start):
        def codegen(context, builder, signature, args):
            data = context.make_array(signature.args[0])(context, builder, args[0])
            row_stride = cgutils.unpack_tuple(builder, data.strides)[0]
            offset = builder.add(builder.mul(args[1], row_stride), args[2])
            piece_type = ir.VectorType(ir.IntType(8), width)
            pointer = builder.bitcast(builder.gep(data.data, [offset]), piece_type.as_pointer())
            piece = builder.load(pointer, align=1)
            lanes = builder.icmp_unsigned("!=", piece, ir.Constant(piece_type, [0] * width))
            bits = builder.bitcast(lanes, ir.IntType(width))
            return builder.zext(bits, ir.IntType(64))

        return types.uint64(array, types.intp, types.intp), codegen

    return load


load_card_bits = _bytes_as_bits_load(52)  # a 52-byte piece (an observation's card set, a mask's cards) as a card set
load_suit_bits = _bytes_as_bits_load(4)  # a 4-byte piece (a seat's void flags) as a 4-bit suit set
