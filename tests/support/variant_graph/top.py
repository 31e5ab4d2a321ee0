import warp as wp

from . import other
from .leaf import leaf, same_name

other_same_name = other.same_name
PAIR = (leaf, other_same_name)


@wp.func
def mid(x: int) -> int:
    return leaf(x) * 2


def make_kernel(scale: int):
    @wp.func
    def scaled(x: int) -> int:
        return mid(x) * wp.static(scale)

    @wp.kernel(module="unique")
    def k(a: wp.array(dtype=int), b: wp.array(dtype=int)):
        i = wp.tid()
        a[i] = scaled(a[i]) + same_name(0) + other_same_name(0)
        b[i] = wp.static(PAIR[0])(b[i]) + wp.static(PAIR[1])(0)

    return k
