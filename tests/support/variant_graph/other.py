import warp as wp

CGB = False


@wp.func
def same_name(x: int) -> int:
    if wp.static(CGB):
        return x + 20
    return x + 2
