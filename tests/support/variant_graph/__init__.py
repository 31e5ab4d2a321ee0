"""A small Warp call graph for tests/test_variant.py: a leaf two modules down whose
``wp.static(CGB)`` block changes its result, reached through a plain call, a factory's
closure, and a tuple of functions; two leaves share a name in different modules."""
