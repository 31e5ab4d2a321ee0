import warp as wp

CGB = False


@wp.func
def leaf(x: int) -> int:
    if wp.static(CGB):
        return x + 100
    return x


@wp.func
def same_name(x: int) -> int:
    return x + 1
