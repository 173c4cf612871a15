#!/usr/bin/python3
"""Writes the workers' environment that one accelerate release's own launch code computes.

usage: generate_env.py ACCELERATE_SRC VERSION CASES_PY OUT_JSON

ACCELERATE_SRC is accelerate's `src` directory at a release tag (e.g. from `git archive v1.14.0
src/accelerate`), run in place with Debian's python3 (torch 1.13, numpy, yaml, packaging, psutil);
only safetensors, huggingface_hub and deepspeed, which Debian does not package, are stubbed (and
torch.distributed.device_mesh, newer than torch 1.13, for 1.10+). For
each case of CASES_PY's `cases(version)` (name, config YAML, launch options) it writes the config
to a file, parses `--config_file FILE OPTIONS train.py` with that release's own
`launch_command_parser()` and runs its own `launch_command()` up to the point where it starts
the workers (torch.distributed.run.run or subprocess.Popen), where it records the environment the
workers would get. OUT_JSON maps each case to the variables that differ from the clean base
environment (PATH, HOME), the working directory written as $CWD, plus "launcher": which of
accelerate's launchers ran and "cmd" for an mpirun/pdsh command line. Nothing of accelerate is
written out: only the environments.
"""
import importlib.abc
import importlib.machinery
import json
import os
import runpy
import sys
import tempfile
import types

STUBBED = ("safetensors", "huggingface_hub", "deepspeed")
# Newer than torch 1.13: stubbed only where the real module is missing (the finder that serves
# them comes last on sys.meta_path). accelerate 1.10+ imports init_device_mesh at module level.
MISSING_STUBBED = ("torch.distributed.device_mesh",)


class _AnyModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name.isupper():
            return "." + name.lower()  # DEEPSPEED_ENVIRONMENT_NAME: a file name
        return lambda *a, **k: None


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, names=None):
        self._names = names

    def find_spec(self, name, path, target=None):
        if (name in self._names) if self._names is not None else name.split(".")[0] in STUBBED:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _AnyModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


class _Started(Exception):
    pass


def run_case(launch, config_text, options, work):
    import subprocess
    import torch.distributed.run as distrib_run

    seen = {}

    def fake_run(args):
        seen.update(launcher="torch.distributed.run", env=dict(os.environ))
        raise _Started()

    def fake_popen(cmd, env=None, **kwargs):
        if cmd[0] == "nvidia-smi":  # a machine without NVIDIA's tools
            raise FileNotFoundError(cmd[0])
        seen.update(launcher="subprocess", env=dict(env if env is not None else os.environ),
                    cmd=list(cmd))
        raise _Started()

    config = os.path.join(work, "config.yaml")
    with open(config, "w") as f:
        f.write(config_text)
    base = {"PATH": "/usr/bin:/bin", "HOME": work}
    os.environ.clear()
    os.environ.update(base)
    os.chdir(work)
    distrib_run.run = fake_run
    subprocess.Popen = fake_popen
    # What this machine lacks but the cases need: DeepSpeed, an FP8 library, Open MPI's mpirun.
    subprocess.check_output = lambda cmd, **k: b"mpirun (Open MPI) 4.1.4"
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("accelerate"):
            for name in ("is_deepspeed_available", "is_fp8_available"):
                if hasattr(module, name):
                    setattr(module, name, lambda: True)
            if getattr(module, "which", None) is not None:
                module.which = lambda name: f"/usr/bin/{name}"
    parser = launch.launch_command_parser()
    try:
        args = parser.parse_args(["--config_file", config] + options + ["train.py", "--epochs", "1"])
        launch.launch_command(args)
    except _Started:
        pass
    except SystemExit as e:
        return {"error": f"exit {e.code}"}
    except Exception as e:  # the release refuses the case: recorded as such
        return {"error": f"{type(e).__name__}: {e}"}
    if not seen:
        return {"error": "no worker was started"}
    env = {k: v.replace(work, "$CWD") for k, v in seen["env"].items() if base.get(k) != v}
    out = {"launcher": seen["launcher"], "env": dict(sorted(env.items()))}
    if "cmd" in seen:
        out["cmd"] = [c.replace(work, "$CWD") for c in seen["cmd"]]
    return out


def main():
    src, version, cases_py, out_path = (os.path.abspath(a) if i != 1 else a
                                        for i, a in enumerate(sys.argv[1:5]))
    sys.meta_path.insert(0, _StubFinder())
    sys.meta_path.append(_StubFinder(MISSING_STUBBED))
    sys.path.insert(0, src)
    import logging
    logging.disable(logging.CRITICAL)
    import accelerate.commands.launch as launch
    import warnings
    warnings.simplefilter("ignore")
    cases = runpy.run_path(cases_py)["cases"](version)
    results = {}
    for name, config_text, options in cases:
        with tempfile.TemporaryDirectory() as work:
            results[name] = {"config": config_text, "options": options,
                             **run_case(launch, config_text, options, os.path.realpath(work))}
    with open(out_path, "w") as f:
        json.dump({"accelerate": version, "cases": results}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
