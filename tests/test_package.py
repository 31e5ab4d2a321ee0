"""What ``import gbxcule`` gives: the backends and errors, loaded on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest

import gbxcule

pytestmark = pytest.mark.api


def test_exports_resolve_to_their_defining_modules():
    from gbxcule.backends.warp_vec import WarpVecCpuBackend, WarpVecCudaBackend
    from gbxcule.core.actions import ActionRangeError

    assert gbxcule.WarpVecCpuBackend is WarpVecCpuBackend
    assert gbxcule.WarpVecCudaBackend is WarpVecCudaBackend
    assert gbxcule.ActionRangeError is ActionRangeError
    assert set(gbxcule.__all__) == {"__version__", *gbxcule._EXPORTS}
    for name in gbxcule.__all__:
        assert getattr(gbxcule, name) is not None
    assert set(dir(gbxcule)) >= set(gbxcule.__all__)
    with pytest.raises(AttributeError, match="no attribute 'WarpVecTpuBackend'"):
        _ = gbxcule.WarpVecTpuBackend


def test_import_alone_loads_no_heavy_dependency():
    code = (
        "import sys, gbxcule; "
        "print(sorted(m for m in ('warp', 'torch', 'pyboy', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
