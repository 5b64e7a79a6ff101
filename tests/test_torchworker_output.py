"""`torchworker.write_output` writes an output window by window (session 28: a 4 GiB KernelBench
output written in one piece cost the worker 16 GiB of resident memory): the file must hold exactly
what a one-piece cast would, for sizes that do and do not divide into windows, and other dtypes."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cudaperf import torchworker  # noqa: E402


@pytest.mark.parametrize("n, dtype, window", [(1000, np.float32, 64), (1001, np.float32, 64),
                                              (37, np.float16, 8), (50, np.int32, 4096), (5, np.float32, 1)])
def test_windows_write_what_one_cast_would(tmp_path, monkeypatch, n, dtype, window):
    monkeypatch.setattr(torchworker, "WRITE_WINDOW_BYTES", window)
    out = (torch.randn(n, dtype=torch.float64) * 100).reshape(-1, 1)[:, 0]  # a strided view
    f = tmp_path / "y.bin"
    np.full(n, 7, dtype=dtype).tofile(f)  # pre-sized and poisoned, as the harness leaves it
    torchworker.write_output(torch, out, f, np.dtype(dtype))
    got = np.fromfile(f, dtype=dtype)
    assert got.size == n
    np.testing.assert_array_equal(got, out.numpy().astype(dtype))


def test_a_two_dimensional_output_is_written_in_row_major_order(tmp_path, monkeypatch):
    monkeypatch.setattr(torchworker, "WRITE_WINDOW_BYTES", 40)
    out = torch.arange(60, dtype=torch.float32).reshape(6, 10).t()  # not contiguous
    f = tmp_path / "y.bin"
    np.zeros(60, dtype=np.float32).tofile(f)
    torchworker.write_output(torch, out, f, np.dtype(np.float32))
    np.testing.assert_array_equal(np.fromfile(f, dtype=np.float32), out.contiguous().reshape(-1).numpy())
