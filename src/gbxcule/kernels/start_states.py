"""The start-state cache on the device: whole env states copied between the cache and the Machine.

The cache is ``uint32 [S, W]``: row ``s`` is one env's full state, every per-env field of
the ``Machine`` packed one after another (``gbxcule.backends.machine_state.MachineLayout``
fixes the order; every field's bytes per env are a multiple of 4). The kernels do not
know the fields by name: they get a table per field, built on the host from the
arrays themselves, so a field added to ``Machine`` needs no change here:

* ``word_field[w]``: which field state word ``w`` belongs to;
* ``field_ptr[k]``: address of field ``k``'s first byte for env 0;
* ``field_env_stride[k]``: bytes from one env's data to the next env's;
* ``field_byte_stride[k]``: bytes between consecutive bytes of one env's data (1 when
  they are contiguous; ``mem`` in the interleaved layout has N);
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


@wp.func
def byte_address(
    ptr: wp.uint64, env_stride: wp.int64, byte_stride: wp.int64, env: int, byte: wp.int64
) -> wp.uint64:
    return ptr + wp.uint64(wp.int64(env) * env_stride + byte * byte_stride)


@wp.func
def write_word(
    ptr: wp.uint64,
    env_stride: wp.int64,
    byte_stride: wp.int64,
    env: int,
    byte: wp.int64,
    value: wp.uint32,
):
    if byte_stride == wp.int64(1):
        word = wp.array(
            ptr=byte_address(ptr, env_stride, byte_stride, env, byte), shape=(1,), dtype=wp.uint32
        )
        word[0] = value
    else:
        shift = wp.uint32(0)
        r = wp.int64(0)
        while r < wp.int64(4):
            addr = byte_address(ptr, env_stride, byte_stride, env, byte + r)
            one = wp.array(ptr=addr, shape=(1,), dtype=wp.uint8)
            one[0] = wp.uint8((value >> shift) & wp.uint32(0xFF))
            shift = shift + wp.uint32(8)
            r = r + wp.int64(1)


@wp.func
def read_word(
    ptr: wp.uint64, env_stride: wp.int64, byte_stride: wp.int64, env: int, byte: wp.int64
) -> wp.uint32:
    if byte_stride == wp.int64(1):
        word = wp.array(
            ptr=byte_address(ptr, env_stride, byte_stride, env, byte), shape=(1,), dtype=wp.uint32
        )
        return word[0]
    value = wp.uint32(0)
    shift = wp.uint32(0)
    r = wp.int64(0)
    while r < wp.int64(4):
        addr = byte_address(ptr, env_stride, byte_stride, env, byte + r)
        one = wp.array(ptr=addr, shape=(1,), dtype=wp.uint8)
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
    field_byte_stride: wp.array(dtype=wp.int64),
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
        write_word(field_ptr[k], field_env_stride[k], field_byte_stride[k], e, byte, cache[slot, w])
        w += LANES


@wp.kernel
def store_to_cache(
    cache: wp.array2d(dtype=wp.uint32),
    word_field: wp.array(dtype=wp.int32),
    field_ptr: wp.array(dtype=wp.uint64),
    field_env_stride: wp.array(dtype=wp.int64),
    field_byte_stride: wp.array(dtype=wp.int64),
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
        cache[slot, w] = read_word(
            field_ptr[k], field_env_stride[k], field_byte_stride[k], env, byte
        )
        w += LANES
