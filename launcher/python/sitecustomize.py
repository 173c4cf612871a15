# accel-launch's sitecustomize: the launcher puts this file's directory first on PYTHONPATH of
# every Python worker (launcher/agent/python_progress.h) when the progress record is on
# (python_progress, ACCEL_PYTHON_PROGRESS). It
#   1. takes its own directory off sys.path and PYTHONPATH again, so the program, and any Python
#      process it starts, sees the environment it would have seen without accel-launch;
#   2. arranges for _accel_launch_progress to write the progress record once the program imports
#      torch (nothing is imported before that, and nothing at all if it never does);
#   3. runs the sitecustomize that Python would otherwise have found (the program's own, or the
#      system's), as that module, so it behaves exactly as before.
# It prints nothing and never raises on its own account.
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _same(entry):
    try:
        return os.path.abspath(entry or os.curdir) == _HERE
    except (TypeError, ValueError):
        return False


def _restore_environment():
    sys.path[:] = [p for p in sys.path if not _same(p)]
    value = os.environ.get("PYTHONPATH")
    if value is None:
        return
    entries = value.split(os.pathsep)
    if _same(entries[0]):
        if len(entries) > 1:  # the launcher wrote "<here>:<the program's PYTHONPATH>"
            os.environ["PYTHONPATH"] = os.pathsep.join(entries[1:])
        else:  # "<here>": the program had none
            del os.environ["PYTHONPATH"]


def _watch_torch():
    path = os.environ.get("ACCEL_PROGRESS_FILE")
    if not path:
        return
    try:
        sys.path.insert(0, _HERE)
        try:
            import _accel_launch_progress  # imports its siblings (_accel_launch_*) too
        finally:
            del sys.path[0]
            for name in [m for m in sys.modules if m.startswith("_accel_launch_")]:
                del sys.modules[name]  # the program's modules, as before
        _accel_launch_progress.watch(path)
    except Exception:  # never the program's problem
        pass


def _chain():
    """Runs the next sitecustomize on sys.path in place of this one."""
    import importlib.machinery
    import importlib.util

    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_restore_environment()
_watch_torch()
_chain()
