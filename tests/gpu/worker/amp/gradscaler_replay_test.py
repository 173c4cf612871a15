#!/usr/bin/env python3
"""Replays libaccel's recorded fp16 scale/skip sequence through torch.amp.GradScaler("cuda").

GpuAcceleratorTest.Fp16ScalerSequenceIsRecorded trains a real fp16 model with libaccel on the
GPU (natural overflows, growth, three injected infs) and writes one line per optimizer step:
"step injected stepped scale_after". This test gives GradScaler, built with the same options, a
gradient that is finite where libaccel stepped and holds an inf where it skipped, through
scaler.scale(loss).backward(), scaler.step() and scaler.update() exactly as a PyTorch AMP loop
does (torch 1.13 through 2.11), and requires that
GradScaler skips the same steps and ends every step with the same scale (exact float32 equality).
So the overflow decisions come from libaccel's fused check; what is compared is what follows
from them: skip or step, backoff, the growth interval's count, growth.
"""
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "testing"))
import gpu_case  # noqa: E402


def read_record(path):
    options, rows = {}, []
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            for item in line[1:].split():
                key, value = item.split("=")
                options[key] = float(value)
        elif line.strip():
            step, injected, stepped, scale = line.split("\t")
            rows.append((int(step), int(injected), int(stepped), float(scale)))
    return options, rows


def make_scaler(torch, options):
    kwargs = dict(init_scale=options["init_scale"], growth_factor=options["growth_factor"],
                  backoff_factor=options["backoff_factor"],
                  growth_interval=int(options["growth_interval"]))
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda", **kwargs), 'torch.amp.GradScaler("cuda")'
    return torch.cuda.amp.GradScaler(**kwargs), "torch.cuda.amp.GradScaler"


def main():
    torch = gpu_case.cuda_torch()
    path = pathlib.Path(gpu_case.env_path("ACCEL_GPU_RECORD_DIR")) / "scaler_sequence.tsv"
    if not path.exists():
        gpu_case.fail(f"no recording at {path}: GpuAcceleratorTest.Fp16ScalerSequenceIsRecorded "
                      "did not run or failed")
    options, rows = read_record(path)
    if not rows:
        gpu_case.fail(f"{path} holds no steps")
    scaler, name = make_scaler(torch, options)
    param = torch.zeros(4, device="cuda", requires_grad=True)
    opt = torch.optim.SGD([param], lr=1.0)
    mismatches = []
    for step, injected, stepped, scale_after in rows:
        # An AMP loop's iteration: scaler.scale(loss).backward(), so the gradient is the scale
        # times d(loss)/d(param) = weight: finite where libaccel stepped, inf where it skipped.
        # (torch 2.x refuses scaler.step() without a scaler.scale() first: "_scale is None".)
        weight = torch.ones(4, device="cuda")
        if not stepped:
            weight[1] = float("inf")
        opt.zero_grad(set_to_none=True)
        scaler.scale((param * weight).sum()).backward()
        before = param.detach().clone()
        scaler.step(opt)
        ours_stepped = int(not torch.equal(before, param.detach()))
        scaler.update()
        theirs = scaler.get_scale()
        if ours_stepped != stepped or theirs != scale_after:
            mismatches.append(f"step {step}: libaccel stepped={stepped} scale={scale_after!r}, "
                              f"{name} stepped={ours_stepped} scale={theirs!r}")
    skipped = sum(1 for r in rows if not r[2])
    print(f"replayed {len(rows)} steps ({skipped} skipped, "
          f"{sum(r[1] for r in rows)} injected) through {name} from torch {torch.__version__}")
    if mismatches:
        gpu_case.fail(f"{len(mismatches)} steps differ:\n  " + "\n  ".join(mismatches[:20]))
    print("PASSED: every step's skip decision and scale match")


if __name__ == "__main__":
    main()
