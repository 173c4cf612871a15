#!/usr/bin/python3
"""Writes the config file that one accelerate release writes, by running that release's own code.

usage: generate.py ACCELERATE_CHECKOUT SCENARIO OUT

A copy of ACCELERATE_CHECKOUT/src/accelerate is imported with its heavy dependencies stubbed: the
enums of utils/dataclasses.py are rebuilt from its syntax tree, `is_*_available` answer False (a
machine without accelerators), and the interactive menu is replaced by scripted answers matched on
the question's words. SCENARIO is one of multi_cpu, multi_gpu, no_distributed_cpu,
no_distributed_gpu_fp16, two_machines_rank0, default_config.
"""
import ast
import os
import re
import shutil
import sys
import tempfile

SCENARIOS = {
    "no_distributed_cpu": dict(kind="No distributed training", cpu="yes", n="1", mp=0),
    "no_distributed_gpu_fp16": dict(kind="No distributed training", cpu="no", n="1", mp=1),
    "multi_cpu": dict(kind="multi-CPU", cpu="yes", n="2", mp=0),
    "multi_gpu": dict(kind="multi-GPU", cpu="no", n="2", mp=1),
    "two_machines_rank0": dict(kind="multi-GPU", cpu="no", n="4", mp=2, machines="2"),
}


def stub_package(checkout, into):
    """Copies accelerate into `into` and replaces the modules that need its dependencies."""
    root = os.path.join(into, "accelerate")
    shutil.copytree(os.path.join(checkout, "src", "accelerate"), root)
    tree = ast.parse(open(os.path.join(root, "utils", "dataclasses.py")).read())
    lines = ["import enum",
             "class _ValueStr(str, enum.Enum):",
             "    def __str__(self):",
             "        return self.value",
             "class _NameStr(str, enum.Enum):",
             "    pass"]
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [ast.unparse(b) for b in node.bases]
        members = [n for n in node.body if isinstance(n, ast.Assign)
                   and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)]
        if members and any("Enum" in b for b in bases):
            base = "_ValueStr" if any("BaseEnum" in b for b in bases) else "_NameStr"
            lines.append(f"class {node.name}({base}):")
            lines += [f"    {ast.unparse(m)}" for m in members]
    write(root, "utils/dataclasses.py", "\n".join(lines))
    write(root, "__init__.py", "")
    write(root, "utils/imports.py",
          "def __getattr__(name):\n    return lambda *a, **k: False\n")
    write(root, "commands/menu/__init__.py", "class BulletMenu:\n    pass\n")
    write(root, "utils/__init__.py", "\n".join([
        "from .dataclasses import *",
        "from . import dataclasses as _dataclasses",
        "try:",
        "    from . import constants as _constants",
        "except Exception:",
        "    _constants = None",
        "def __getattr__(name):",
        "    for module in (_constants, _dataclasses):",
        "        if module is not None and hasattr(module, name):",
        "            return getattr(module, name)",
        "    if name.startswith('is_'):",
        "        return lambda *a, **k: False",
        "    return ['x'] if name.isupper() else (lambda *a, **k: None)"]))


def write(root, relative, text):
    with open(os.path.join(root, relative), "w") as f:
        f.write(text + "\n")


# (question pattern, answer); the machine type is answered by its menu entry's name.
def answers(s):
    return [
        (r"How many different machines", s.get("machines", "1")),
        (r"rank of this machine", 0),
        (r"IP address", "10.0.0.1"),
        (r"port you will use", "29500"),
        (r"same local network", "yes"),
        (r"rendezvous backend", "static"),
        (r"CPU only", s["cpu"]),
        (r"checked while running|debug", "no"),
        (r"mpirun|IPEX|Intel PyTorch Extension|XPU plugin|dynamo|DeepSpeed", "no"),
        (r"FullyShardedDataParallel|FSDP|parallelism|TensorParallel|Megatron|numa", "no"),
        (r"should be used for distributed training|How many processes", s["n"]),
        (r"by id", "all"),
        (r"FP16 or BF16|mixed precision", s["mp"]),
    ]


def main():
    checkout, scenario, out = sys.argv[1:4]
    work = tempfile.mkdtemp()
    stub_package(os.path.abspath(checkout), work)
    sys.path.insert(0, work)
    import accelerate.commands.config.cluster as cluster
    import accelerate.commands.config.default as default

    if scenario == "default_config":
        default.write_basic_config("no", out)
        return
    s = SCENARIOS[scenario]

    def answer(text):
        for pattern, value in answers(s):
            if re.search(pattern, text, re.I):
                return value
        raise SystemExit(f"no scripted answer for: {text!r}")

    def ask_field(text, convert_value=None, default=None, error_message=None):
        value = answer(text)
        return convert_value(value) if convert_value else value

    def ask_options(text, options=[], convert_value=None, default=0):
        value = options.index(s["kind"]) if "type of machine" in text else answer(text)
        return convert_value(value) if convert_value else value

    cluster._ask_field, cluster._ask_options = ask_field, ask_options
    cluster.get_cluster_input().to_yaml_file(out)


if __name__ == "__main__":
    main()
