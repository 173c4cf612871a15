"""What a Python worker under accel-launch reports, counted without touching the script.

sitecustomize.py (beside this file) calls watch(path) at interpreter start when the launcher set
ACCEL_PROGRESS_FILE. Nothing happens until the program imports torch; then this module counts into
the progress record (_accel_launch_record.py: libaccel's six words, common/progress_record.h):
  optimizer steps        every Optimizer.step (torch >= 2.0: the global step post-hook; 1.13: the
                         profiler's per-step entry point, Optimizer._optimizer_step_code); an
                         optimizer that wraps another (accelerate's, ZeRO's) is counted once;
  collectives started    torch.distributed's collectives (the outermost call: all_gather_object's
  and done               inner all_gather is not counted again), DDP's parameter broadcasts, and
                         each DDP gradient synchronisation (one per backward that syncs: its
                         buckets' all-reduces together; DDP's own path is left as it is);
  wait nanoseconds       time the program was blocked in communication: a blocking collective
                         from call to return, and DDP from the end of backward's compute until
                         it has its gradients (an async_op collective is counted, not timed:
                         the program computes meanwhile);
  samples                the first dimension of each batch the program got from a DataLoader
                         (the outermost: a subclass's own generator, e.g. accelerate's loader
                         that hands each process its slice of what process 0 read, counts).
Nothing is printed; any failure here turns the record off and leaves the program as it was.
"""
import functools
import sys
import threading
import weakref

from _accel_launch_record import Record

# torch.distributed's collectives (every rank of the group calls them, in the same order).
# Point-to-point calls (send, recv, isend, irecv, batch_isend_irecv) are not collectives.
_COLLECTIVES = (
    "all_reduce", "all_reduce_coalesced", "all_reduce_multigpu", "all_gather",
    "all_gather_into_tensor", "all_gather_coalesced", "all_gather_multigpu", "all_gather_object",
    "_all_gather_base", "broadcast", "broadcast_multigpu", "broadcast_object_list", "reduce",
    "reduce_multigpu", "reduce_scatter", "reduce_scatter_tensor", "reduce_scatter_multigpu",
    "_reduce_scatter_base", "all_to_all", "all_to_all_single", "gather", "gather_object",
    "scatter", "scatter_object_list", "barrier", "monitored_barrier", "_broadcast_coalesced")


_record = None
# On this thread: .depth collectives entered, .loading DataLoader subclass iterators entered and
# .read the samples torch's iterators read inside them.
_tls = threading.local()
# What _install replaced: (owner, attribute name, wrapper); wrapper.__wrapped__ is the original.
# bench/python_progress_blocks.py swaps them back and forth to measure what they cost.
_PATCHES = []


def _patch(owner, name, wrapper):
    setattr(owner, name, wrapper)
    _PATCHES.append((owner, name, wrapper))


# --- optimizer steps --------------------------------------------------------------------------

def _wraps_another(optimizer, optimizer_type):
    for name in ("optimizer", "optim"):
        if isinstance(getattr(optimizer, name, None), optimizer_type):
            return True
    return False


def _step_counter(Optimizer):
    """A function of an optimizer that counts its step, unless it wraps another optimizer (whose
    step counts). Decided once per optimizer class: the look-up costs more than the count."""
    wraps = {}

    def count(optimizer):
        cls = type(optimizer)
        wrapper = wraps.get(cls)
        if wrapper is None:
            wrapper = wraps[cls] = _wraps_another(optimizer, Optimizer)
        if not wrapper:
            _record.step()
            if _STEP_CLEARS:  # a backward that failed may have left them pending
                for sync in list(_STEP_CLEARS):
                    sync._pending = False

    return count


def _count_steps(torch):
    optimizer_module = sys.modules["torch.optim.optimizer"]
    Optimizer = optimizer_module.Optimizer
    count = _step_counter(Optimizer)
    register = getattr(optimizer_module, "register_optimizer_step_post_hook", None)
    if register is not None:  # torch >= 2.0
        register(lambda optimizer, args, kwargs: count(optimizer))
        return
    # torch 1.13: Optimizer.__init__ wraps each optimizer class's step so that every step ends in
    # self._optimizer_step_code(), an empty method kept for the profiler.
    original = Optimizer._optimizer_step_code

    @functools.wraps(original)
    def _optimizer_step_code(self):
        count(self)
        return original(self)

    _patch(Optimizer, "_optimizer_step_code", _optimizer_step_code)


# --- torch.distributed collectives ------------------------------------------------------------

def _async_index(fn):
    import inspect

    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None
    return params.index("async_op") if "async_op" in params else None


def _wrap_collective(fn):
    index = _async_index(fn)

    @functools.wraps(fn)
    def collective(*args, **kwargs):
        if getattr(_tls, "depth", 0) or not _record.live:
            return fn(*args, **kwargs)  # inside another collective, or a forked child
        if index is not None and (kwargs.get("async_op") or
                                  (len(args) > index and args[index])):
            _record.started(False)
            _tls.depth = 1
            try:
                work = fn(*args, **kwargs)
            except BaseException:
                _record.done(False)
                raise
            finally:
                _tls.depth = 0
            _count_when_done(work)
            return work
        _record.started(True)
        _tls.depth = 1
        try:
            return fn(*args, **kwargs)
        finally:
            _tls.depth = 0
            _record.done(True)

    return collective


def _count_when_done(work):
    try:
        work.get_future().then(lambda _: _record.done(False))
    except Exception:  # no work (this rank is not in the group) or no future: done now
        _record.done(False)


def _count_collectives(dist):
    c10d = sys.modules.get("torch.distributed.distributed_c10d")
    for name in _COLLECTIVES:
        fn = getattr(dist, name, None)
        if fn is None or not callable(fn):
            continue
        wrapped = _wrap_collective(fn)
        _patch(dist, name, wrapped)
        if c10d is not None and getattr(c10d, name, None) is fn:
            _patch(c10d, name, wrapped)  # the object collectives call these by module global


# --- DDP's gradient all-reduce ----------------------------------------------------------------

class _DdpSync:
    """One DDP model's gradient synchronisations (every bucket's all-reduce of one backward),
    each counted as one collective, without touching DDP's own path. A hook on one of its
    parameters (registered once; a hook on a tensor of each step costs far more) runs during
    every backward and, when the last forward asked for a sync, queues a callback on the
    autograd engine. That runs when backward's compute is done, where the rank starts to depend
    on its peers; DDP's own end-of-backward callback, queued later (when its last bucket became
    ready: after this hook, which runs before DDP's hook on the same parameter), then waits for
    the buckets. The collective starts there, and a second callback, queued then, runs once DDP
    has its gradients: the collective is done, the wait timed.
    Which parameter: DDP requires every parameter to get a gradient in every backward that syncs
    unless find_unused_parameters is set; then every parameter is hooked and the first to run
    in a backward counts it (_pending: cleared by the second callback, or by the next optimizer
    step after a backward that failed and ran no callbacks). A failed backward without it
    leaves nothing behind: the one hook runs once per backward."""

    def __init__(self, engine, ddp):
        self._queue = engine.queue_callback
        self._ddp = weakref.ref(ddp)
        self._pending = False
        self._handles = []
        self._backward_done_cb, self._synced_cb = self._backward_done, self._synced
        params = [p for p in ddp.parameters() if p.requires_grad]
        self._params, self._hook = params[-1:], self._hook_one
        if getattr(ddp, "find_unused_parameters", False):
            self._params, self._hook = params, self._hook_first
            _STEP_CLEARS.add(self)

    def attach(self):
        if not self._handles:
            self._handles = [p.register_hook(self._hook) for p in self._params]

    def detach(self):
        while self._handles:
            self._handles.pop().remove()

    def _hook_one(self, _grad):  # runs once in every backward
        ddp = self._ddp()
        if ddp is not None and ddp.require_forward_param_sync and _record.live:
            try:
                self._queue(self._backward_done_cb)
                self._pending = True
            except Exception:
                pass

    def _hook_first(self, grad):  # on every parameter: the first to run in a backward counts
        if not self._pending:
            self._hook_one(grad)

    def _backward_done(self):
        _record.started(True)
        try:
            self._queue(self._synced_cb)
        except Exception:
            self._synced()

    def _synced(self):
        self._pending = False
        _record.done(True)


_SYNCS = weakref.WeakKeyDictionary()  # DDP model: its _DdpSync
_STEP_CLEARS = weakref.WeakSet()  # those whose _pending an optimizer step clears


def _count_ddp(torch):
    parallel = sys.modules.get("torch.nn.parallel.distributed")
    if parallel is None:
        return
    DDP = parallel.DistributedDataParallel
    original = DDP.__init__
    engine = torch.autograd.Variable._execution_engine

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        try:
            sync = _DdpSync(engine, self)
            sync.attach()
            _SYNCS[self] = sync
        except Exception:
            pass

    _patch(DDP, "__init__", __init__)


def _switch(on):
    """Every patch and DDP hook on or off (bench/python_progress_blocks.py measures the cost)."""
    for owner, name, wrapper in _PATCHES:
        setattr(owner, name, wrapper if on else wrapper.__wrapped__)
    for sync in list(_SYNCS.values()):
        sync.attach() if on else sync.detach()


# --- samples ----------------------------------------------------------------------------------

def _batch_size(torch, batch):
    for _ in range(3):
        if isinstance(batch, torch.Tensor):
            return int(batch.shape[0]) if batch.dim() > 0 else 0
        if isinstance(batch, (list, tuple)) and batch:
            batch = batch[0]
        elif isinstance(batch, dict) and batch:
            batch = next(iter(batch.values()))
        else:
            return 0
    return 0


def _count_samples(torch):
    """Counts each batch where the program gets it: from torch's DataLoader iterator, or from a
    DataLoader subclass whose __iter__ is a generator of its own (accelerate's DataLoaderShard;
    its DataLoaderDispatcher reads all processes' batches on process 0, hands each its slice):
    the outermost counts, so a rank counts what it trains on."""
    import inspect

    loader = sys.modules.get("torch.utils.data.dataloader")
    if loader is None:
        return
    base = loader._BaseDataLoaderIter
    original = base.__next__

    @functools.wraps(original)
    def __next__(self):
        batch = original(self)
        if getattr(_tls, "loading", 0):
            _tls.read += _batch_size(torch, batch)  # inside a subclass's iterator: it counts
        else:
            _record.samples(_batch_size(torch, batch))
        return batch

    _patch(base, "__next__", __next__)

    def outermost(own_iter):
        @functools.wraps(own_iter)
        def __iter__(self):
            batches = own_iter(self)
            while True:
                depth = getattr(_tls, "loading", 0)
                if not depth:
                    _tls.read = 0
                _tls.loading = depth + 1
                try:
                    batch = next(batches)
                except StopIteration:
                    return
                finally:
                    _tls.loading = depth
                if not depth:  # what it handed out; what it read if that has no batch size
                    _record.samples(_batch_size(torch, batch) or _tls.read)
                yield batch

        return __iter__

    DataLoader = loader.DataLoader
    if "__init_subclass__" in vars(DataLoader):
        return  # not torch 1.13 to 2.x's DataLoader: its own hook is left alone

    def __init_subclass__(cls, **kwargs):
        super(DataLoader, cls).__init_subclass__(**kwargs)
        try:
            own = vars(cls).get("__iter__")
            if own is not None and inspect.isgeneratorfunction(own):  # still a generator to it
                _patch(cls, "__iter__", outermost(own))
        except Exception:  # never the program's problem: its class is made as before
            pass

    DataLoader.__init_subclass__ = classmethod(__init_subclass__)


# --- torch's import -----------------------------------------------------------------------------

def _install(torch):
    dist = sys.modules.get("torch.distributed")
    _count_steps(torch)
    _count_samples(torch)
    if dist is not None and dist.is_available():
        _count_collectives(dist)
        _count_ddp(torch)


class _Loader:
    """torch's own loader, then _install once torch's __init__ has run."""

    def __init__(self, real, path):
        self._real = real
        self._path = path

    def create_module(self, spec):
        create = getattr(self._real, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module):
        module.__loader__ = self._real
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._real
        self._real.exec_module(module)
        global _record
        try:
            _record = Record(self._path)
            _install(module)
        except Exception:
            if _record is not None:
                _record.live = False


class _TorchFinder:
    """A meta path finder that only ever answers for "torch", once."""

    def __init__(self, path):
        self._path = path

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        try:
            import importlib.util

            spec = importlib.util.find_spec("torch")
        except Exception:
            return None
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Loader(spec.loader, self._path)
        return spec


def watch(path):
    """Writes the record to `path` once torch is imported (at once if it already is)."""
    if "torch" in sys.modules:
        return
    sys.meta_path.insert(0, _TorchFinder(path))
