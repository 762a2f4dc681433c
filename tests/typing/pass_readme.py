# ruff: noqa: I001  (the README's import order, kept verbatim)
"""The README's Python example, verbatim: it type-checks as written.

tests/python/test_typing.py checks that README.md still shows exactly this code.
"""

import numpy as np
import cudnn_rs as cd

h = cd.Handle(device="cpu")  # cd.Handle() for CUDA device 0
rng = np.random.default_rng(0)
w = cd.Filter.from_numpy(h, rng.standard_normal((8, 4, 3, 3), dtype=np.float32))
dy = cd.Tensor.from_numpy(h, rng.standard_normal((2, 8, 16, 16), dtype=np.float32))
conv = cd.ConvolutionDescriptor(padding=(1, 1), stride=(1, 1), dilation=(1, 1))

# the one-call API: picks the algorithm and workspace, returns dx
dx = cd.convolution_backward_data(h, w, dy, conv, x_shape=(2, 4, 16, 16))
assert dx.to_numpy().shape == (2, 4, 16, 16)

# the original's API: dx = alpha * dgrad(w, dy) + beta * dx
out = cd.Tensor.zeros(h, (2, 4, 16, 16), dtype=cd.f32, format=cd.NCHW)
best = h.get_convolution_backward_data_algorithm(w, dy, out, conv)
size = h.get_convolution_backward_data_workspace_size(w, dy, out, conv, best)
h.convolution_backward_data(1.0, w, dy, conv, best, cd.Workspace(h, size), 0.0, out)
assert np.allclose(out.to_numpy(), dx.to_numpy(), rtol=1e-5, atol=1e-5)

# cuDNN's graph (backend) API: its engines, timed on these operands, fastest first
engine = h.find_convolution_backward_data_engine(w, dy, out, conv)[0]
size = h.get_convolution_backward_data_workspace_size(w, dy, out, conv, engine)
h.convolution_backward_data(1.0, w, dy, conv, engine, cd.Workspace(h, size), 0.0, out)
# or the graph API's heuristic engine, chosen once per problem and kept on the handle
best_engine = cd.BestEngine()
size = h.get_convolution_backward_data_workspace_size(w, dy, out, conv, best_engine)
ws = cd.Workspace(h, size)
h.convolution_backward_data(1.0, w, dy, conv, best_engine, ws, 0.0, out)
assert np.allclose(out.to_numpy(), dx.to_numpy(), rtol=1e-5, atol=1e-5)
