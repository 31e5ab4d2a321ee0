"""The start-state cache on the device: whole env states copied between the cache and the Machine.

The cache is ``uint32 [S, W]``: row ``s`` is one env's full state, every per-env field of
the ``Machine`` packed one after another (``gbxcule.backends.machine_state.MachineLayout``
fixes the order; every field's bytes per env are a multiple of 4). The kernels do not
know the fields by name: they get a table per field, built on the host from the
arrays themselves, so a field added to ``Machine`` needs no change here:

* ``word_field[w]``: which field state word ``w`` belongs to;
* ``field_ptr[k]``: address of field ``k``'s first byte for env 0;
* ``field_env_stride[k]``: bytes from one env's data to the next env's;
* ``field_item[k]``: bytes per element of the field's dtype;
* ``field_elem_stride[k]``: bytes between consecutive elements of one env's data, taken
  in row-major order (the item size when they are contiguous; N times it in the
  interleaved layout, where every per-env block keeps the env axis last);
* ``field_first_word[k]``: the field's first word in the state.

Each launch is ``dim = (N, LANES)`` (restore) or ``LANES`` (store): the lanes of one
env walk its state words ``lane, lane + LANES, ...``, so neighbouring threads touch
neighbouring words (coalesced on CUDA) and the cost is the state size per env restored.
"""

from __future__ import annotations

import warp as wp

wp.set_module_options({"enable_backward": False})

LANES = 256
# errors[0] counts envs whose slot was out of range, errors[1] is one such env.
ERR_COUNT = wp.constant(0)
ERR_ENV = wp.constant(1)


@wp.struct
class FieldAt:
    """Where one field of one env lies (a row of the per-field address table)."""

    ptr: wp.uint64
    env_stride: wp.int64
    item: wp.int64
    elem_stride: wp.int64


@wp.func
def field_at(
    ptrs: wp.array(dtype=wp.uint64),
    env_strides: wp.array(dtype=wp.int64),
    items: wp.array(dtype=wp.int32),
    elem_strides: wp.array(dtype=wp.int64),
    k: int,
) -> FieldAt:
    f = FieldAt()
    f.ptr = ptrs[k]
    f.env_stride = env_strides[k]
    f.item = wp.int64(items[k])
    f.elem_stride = elem_strides[k]
    return f


@wp.func
def byte_address(f: FieldAt, env: int, byte: wp.int64) -> wp.uint64:
    """Byte ``byte`` of env ``env``'s data: its element, then the byte within it."""
    el = byte // f.item
    return f.ptr + wp.uint64(wp.int64(env) * f.env_stride + el * f.elem_stride + byte - el * f.item)


@wp.func
def word_whole(f: FieldAt) -> int:
    """1 when a state word (4 bytes at a multiple of 4) lies whole at one address: the
    env's data contiguous, or elements of 4 bytes or more (the host checks alignment)."""
    return wp.where(f.elem_stride == f.item or f.item >= wp.int64(4), 1, 0)


@wp.func
def write_word(f: FieldAt, env: int, byte: wp.int64, value: wp.uint32):
    if word_whole(f) != 0:
        word = wp.array(ptr=byte_address(f, env, byte), shape=(1,), dtype=wp.uint32)
        word[0] = value
    else:
        shift = wp.uint32(0)
        r = wp.int64(0)
        while r < wp.int64(4):
            one = wp.array(ptr=byte_address(f, env, byte + r), shape=(1,), dtype=wp.uint8)
            one[0] = wp.uint8((value >> shift) & wp.uint32(0xFF))
            shift = shift + wp.uint32(8)
            r = r + wp.int64(1)


@wp.func
def read_word(f: FieldAt, env: int, byte: wp.int64) -> wp.uint32:
    if word_whole(f) != 0:
        word = wp.array(ptr=byte_address(f, env, byte), shape=(1,), dtype=wp.uint32)
        return word[0]
    value = wp.uint32(0)
    shift = wp.uint32(0)
    r = wp.int64(0)
    while r < wp.int64(4):
        one = wp.array(ptr=byte_address(f, env, byte + r), shape=(1,), dtype=wp.uint8)
        value = value | (wp.uint32(one[0]) << shift)
        shift = shift + wp.uint32(8)
        r = r + wp.int64(1)
    return value


@wp.kernel
def restore_from_cache(
    cache: wp.array2d(dtype=wp.uint32),
    word_field: wp.array(dtype=wp.int32),
    field_ptr: wp.array(dtype=wp.uint64),
    field_env_stride: wp.array(dtype=wp.int64),
    field_item: wp.array(dtype=wp.int32),
    field_elem_stride: wp.array(dtype=wp.int64),
    field_first_word: wp.array(dtype=wp.int32),
    mask: wp.array(dtype=wp.uint8),
    slots: wp.array(dtype=wp.int32),
    num_slots: int,
    use_seed: int,
    seed: int,
    chosen: wp.array(dtype=wp.int32),
    restores: wp.array(dtype=wp.int32),
    errors: wp.array(dtype=wp.int32),
):
    """Envs with ``mask[e] != 0`` take cache row ``slots[e]`` (or a seeded random row).

    A slot outside ``[0, num_slots)`` restores nothing and is counted in ``errors``.
    ``chosen[e]`` records the row used; ``restores[e]`` counts restores of env ``e``.
    """
    e, lane = wp.tid()
    if mask[e] == wp.uint8(0):
        return
    slot = wp.int32(0)
    if use_seed != 0:
        rng = wp.rand_init(seed, e)
        slot = wp.randi(rng, 0, num_slots)
    else:
        slot = slots[e]
    if slot < 0 or slot >= num_slots:
        if lane == 0:
            wp.atomic_add(errors, ERR_COUNT, 1)
            errors[ERR_ENV] = e
        return
    if lane == 0:
        chosen[e] = slot
        restores[e] = restores[e] + 1
    w = lane
    while w < cache.shape[1]:
        k = word_field[w]
        byte = wp.int64(w - field_first_word[k]) * wp.int64(4)
        f = field_at(field_ptr, field_env_stride, field_item, field_elem_stride, k)
        write_word(f, e, byte, cache[slot, w])
        w += LANES


@wp.kernel
def store_to_cache(
    cache: wp.array2d(dtype=wp.uint32),
    word_field: wp.array(dtype=wp.int32),
    field_ptr: wp.array(dtype=wp.uint64),
    field_env_stride: wp.array(dtype=wp.int64),
    field_item: wp.array(dtype=wp.int32),
    field_elem_stride: wp.array(dtype=wp.int64),
    field_first_word: wp.array(dtype=wp.int32),
    env: int,
    slot: int,
):
    """Cache row ``slot`` = the current state of ``env`` (launch with ``dim = LANES``)."""
    lane = wp.tid()
    w = lane
    while w < cache.shape[1]:
        k = word_field[w]
        byte = wp.int64(w - field_first_word[k]) * wp.int64(4)
        f = field_at(field_ptr, field_env_stride, field_item, field_elem_stride, k)
        cache[slot, w] = read_word(f, env, byte)
        w += LANES
