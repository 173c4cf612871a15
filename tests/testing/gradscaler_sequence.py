#!/usr/bin/python3
"""Records torch.cuda.amp.GradScaler's scale/skip sequence for
tests/unit/worker/amp/loss_scaler_test.cc.

GradScaler needs CUDA and its two kernels (_amp_foreach_non_finite_check_and_unscale_,
_amp_update_scale_) have no CPU implementation in torch 1.13. So this script runs torch 1.13's
real GradScaler Python logic (unscale_/step/update, the skip decision, the per-optimizer state)
on CPU tensors, with torch.cuda.is_available patched to True and the two kernels replaced by
line-by-line Python transcriptions of aten/src/ATen/native/cuda/AmpKernels.cu (1.13).
Output: one line per step "step inject stepped scale_after tracker_after", pasted into the test.

Run with Debian's torch: /usr/bin/python3 tests/testing/gradscaler_sequence.py
"""
import math
import sys

import torch
from torch.cuda.amp import GradScaler
from torch.cuda.amp import grad_scaler as grad_scaler_module


def non_finite_check_and_unscale_(grads, found_inf, inv_scale):
    # AmpKernels.cu: found_inf = 1 if any value is not finite; every value *= inv_scale.
    for g in grads:
        if not torch.isfinite(g).all():
            found_inf.fill_(1.0)
        g.mul_(inv_scale.item())


def update_scale_(current_scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                  growth_interval):
    # _amp_update_scale_cuda_kernel, in float32 like the kernel's float* current_scale.
    if found_inf.item():
        current_scale.fill_(float(torch.tensor(current_scale.item() * backoff_factor,
                                               dtype=torch.float32)))
        growth_tracker.fill_(0)
    else:
        successful = growth_tracker.item() + 1
        if successful == growth_interval:
            new_scale = float(torch.tensor(current_scale.item() * growth_factor,
                                           dtype=torch.float32))
            if math.isfinite(new_scale):
                current_scale.fill_(new_scale)
            growth_tracker.fill_(0)
        else:
            growth_tracker.fill_(successful)
    return current_scale


def replicator_init(self, master_tensor):
    # _MultiDeviceReplicator asserts is_cuda; otherwise identical.
    self.master = master_tensor
    self._per_device_tensors = {}


torch.cuda.is_available = lambda: True
grad_scaler_module._MultiDeviceReplicator.__init__ = replicator_init
torch._amp_foreach_non_finite_check_and_unscale_ = non_finite_check_and_unscale_
torch._amp_update_scale_ = update_scale_


def run(name, steps, inject, **kwargs):
    scaler = GradScaler(**kwargs)
    scaler._lazy_init_scale_growth_tracker(torch.device("cpu"))
    param = torch.nn.Parameter(torch.zeros(4))
    opt = torch.optim.SGD([param], lr=1.0)
    print(f"# {name} {kwargs}")
    for step in range(1, steps + 1):
        kind = inject.get(step, "")
        grad = torch.full((4,), scaler.get_scale())  # a scaled gradient of ones
        if kind == "inf":
            grad[2] = float("inf")
        elif kind == "nan":
            grad[1] = float("nan")
        param.grad = grad
        before = param.detach().clone()
        scaler.step(opt)
        stepped = int(not torch.equal(before, param.detach()))
        scaler.update()
        print(step, kind or "-", stepped, repr(scaler.get_scale()), scaler._get_growth_tracker())


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "short"
    if which == "short":
        run("short", 14, {4: "inf", 5: "nan", 10: "inf"}, init_scale=2.0**16, growth_factor=2.0,
            backoff_factor=0.5, growth_interval=3)
    else:  # defaults: growth after 2000 clean steps
        run("defaults", 2003, {2001: "inf"})
