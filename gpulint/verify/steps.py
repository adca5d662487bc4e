"""Step boundaries, and what is recorded at each: host-read counts, time, a parameter checksum, the losses.

A step is an optimizer step (a global post-step hook), or, in a program that never builds an optimizer (an
evaluation loop), a DataLoader batch. Everything recorded inside the loop stays on the device (CUDA events, norms
stacked into device tensors, detached losses) and is copied to the host once, in `finish()`: the probe adds no
sync to the loop it measures.

Windows: window i is the time between boundary i-1 and boundary i (window 0 holds the program's setup).
Warm-up windows [0, warmup) are not measured. On CUDA, the profiler then counts syncs over `profile_steps`
windows; step times are taken from the windows after it (the profiler slows the steps it watches), or from all
windows after warm-up on the CPU.
"""

from __future__ import annotations

import os
import time
from collections import Counter

PROGRESS_EVERY = 0.25  # seconds between two writes of the step count for the parent's progress line

# CUDA runtime and driver calls that block the host until the device (or a stream, or an event) is done.
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
              "cudaMemcpy2D", "cudaMemset", "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize",
              "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2")
SYNC_WARNING = "called a synchronizing CUDA operation"
LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")


class StopRun(BaseException):
    """Raised at the step limit; a BaseException so that the script's `except Exception:` lets it through."""


class StepRecorder:
    def __init__(self, torch, host_reads, *, max_steps: int, warmup: int, profile_steps: int,
                 progress_path: str = "") -> None:
        self.torch = torch
        self.host_reads = host_reads
        self.max_steps = max_steps
        self.warmup = warmup
        self.profile_steps = profile_steps
        self.unit = None  # "optimizer" or "loader"
        self.optimizer_built = False
        self._reset()
        self.losses: list = []  # device scalars, one per backward()
        self.sync_warnings = 0
        self._counting_warnings = False
        host_reads.counting = warmup == 0
        # The step count for the parent's progress line: rewritten in place at most every PROGRESS_EVERY seconds
        # (one pwrite of a few bytes, no sync), only when the parent shows progress.
        self._progress_fd = os.open(progress_path, os.O_WRONLY | os.O_CREAT, 0o600) if progress_path else None
        self._progress_at = 0.0

    def _reset(self) -> None:
        self.host_counts: list[int] = []
        self.device_counts: list[int] = []
        self.clock: list[float] = []
        self.events: list = []  # a CUDA event per boundary, or None
        self.checksums: list = []  # (optimizer index, device tensor [2, n_params]) per optimizer step
        self.optimizers: list = []
        self.profiler = None
        self.profile_window = None  # (first, last) windows the profiler watched
        self.profiled_events = None

    # -- hooks ------------------------------------------------------------------------------------------------
    def install(self) -> None:
        torch = self.torch
        from torch.optim.optimizer import Optimizer, register_optimizer_step_post_hook

        register_optimizer_step_post_hook(self._after_optimizer_step)
        original_init = Optimizer.__init__

        def init(optimizer, *args, **kwargs):
            self.optimizer_built = True
            original_init(optimizer, *args, **kwargs)

        Optimizer.__init__ = init

        from torch.utils.data import dataloader

        original_next = dataloader._BaseDataLoaderIter.__next__

        def next_batch(iterator):
            if self.unit in (None, "loader") and not self.optimizer_built and self._at_limit():
                raise StopRun
            batch = original_next(iterator)
            if self.unit in (None, "loader") and not self.optimizer_built:
                self.unit = "loader"
                self._boundary()
            return batch

        dataloader._BaseDataLoaderIter.__next__ = next_batch

        original_backward = torch.Tensor.backward

        def backward(loss, *args, **kwargs):
            if loss.is_floating_point():
                self.losses.append(loss.detach().float().sum())
            return original_backward(loss, *args, **kwargs)

        backward.__doc__ = original_backward.__doc__
        torch.Tensor.backward = backward

    def _at_limit(self) -> bool:
        return self.max_steps > 0 and len(self.host_counts) >= self.max_steps

    def _after_optimizer_step(self, optimizer, args, kwargs) -> None:
        if self.unit != "optimizer":
            if self.unit == "loader":  # an evaluation pass came first: measure the training steps instead
                self._stop_profiler()
                self._reset()
                self.host_reads.sites.clear()
                self.host_reads.counting = self.warmup == 0
            self.unit = "optimizer"
        self._checksum(optimizer)
        self._boundary()
        if self._at_limit():
            raise StopRun

    # -- at each boundary -------------------------------------------------------------------------------------
    def _boundary(self) -> None:
        torch = self.torch
        self.host_counts.append(self.host_reads.count)
        self.device_counts.append(self.host_reads.device_count)
        now = time.perf_counter()
        self.clock.append(now)
        self.host_reads.window = len(self.host_counts)
        if self._progress_fd is not None and now - self._progress_at >= PROGRESS_EVERY:
            self._progress_at = now
            os.pwrite(self._progress_fd, b"%-12d" % len(self.host_counts), 0)
        event = None
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            event = torch.cuda.Event(enable_timing=True)
            event.record()
        self.events.append(event)
        index = len(self.host_counts) - 1  # boundary i closes window i
        if index == self.warmup - 1:
            self.host_reads.counting = True  # per-line attribution covers the measured windows only
        if event is not None and self.profile_steps > 0:
            if index == self.warmup - 1 or (self.warmup == 0 and index == 0):
                self._start_profiler(index + 1)
            elif self.profiler is not None and index == self.profile_window[0] + self.profile_steps - 1:
                self._stop_profiler()

    def _checksum(self, optimizer) -> None:
        """L1 and L2 norms of every parameter, computed and kept on the device (fused kernels, no sync)."""
        torch = self.torch
        if not any(optimizer is o for o in self.optimizers):
            self.optimizers.append(optimizer)
        which = next(i for i, o in enumerate(self.optimizers) if o is optimizer)
        params = [_local(p) for group in optimizer.param_groups for p in group["params"]]
        if not params:
            return
        with torch.no_grad():
            norms = [_stack(torch, _norms(torch, params, order)) for order in (1, 2)]
            self.checksums.append((which, torch.stack(norms)))

    # -- the sync count (CUDA) ---------------------------------------------------------------------------------
    def _start_profiler(self, first_window: int) -> None:
        from torch.profiler import ProfilerActivity, profile

        self.profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        self.profiler.start()
        self.profile_window = (first_window, first_window - 1)
        self._sync_warnings_on(True)

    def _stop_profiler(self) -> None:
        if self.profiler is None:
            return
        self._sync_warnings_on(False)
        last = len(self.host_counts) - 1
        self.profile_window = (self.profile_window[0], last)
        from torch.profiler import record_function

        # Stopping synchronizes the device (to collect its activity) while still recording: the marker lets
        # that sync, the probe's own, be left out.
        with record_function(_END_MARKER):
            pass
        try:
            self.profiler.stop()
            self.profiled_events = _calls_before_marker(self.profiler.events())
        except Exception as exc:  # a profiler that cannot start here (no CUPTI) leaves the warning count
            self.profiled_events = None
            self.profiler_error = f"{type(exc).__name__}: {exc}"
        self.profiler = None

    def _sync_warnings_on(self, on: bool) -> None:
        """PyTorch's sync debug mode warns at every synchronizing call: a second, torch-level count."""
        try:
            self.torch.cuda.set_sync_debug_mode("warn" if on else "default")
            self._counting_warnings = on
        except Exception:
            pass

    def saw_sync_warning(self) -> bool:
        if self._counting_warnings:
            self.sync_warnings += 1
            return True
        return False

    # -- at exit ----------------------------------------------------------------------------------------------
    def finish(self) -> dict:
        """Copy what was recorded to the host (the only syncs the probe makes) and summarise it."""
        torch = self.torch
        self._stop_profiler()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
        n = len(self.host_counts)
        windows = list(range(max(self.warmup, 1), n))
        # A program whose loop runs on the GPU: only reads of device tensors are syncs. On the CPU (also a
        # program that only initialised CUDA, a gloo job on a GPU machine say): every read counts.
        on_gpu = self._loop_on_gpu()
        counts = self.device_counts if on_gpu else self.host_counts
        reads = [counts[i] - counts[i - 1] for i in windows]
        result = {
            "unit": self.unit,
            "steps": n,
            "warmup": self.warmup,
            "host_reads_per_window": reads,
            "host_reads_total": self.host_reads.device_count if on_gpu else self.host_reads.count,
            "host_reads_of": "device tensors" if on_gpu else "all tensors",
            "host_read_sites": [[f, line, name, k] for (f, line, name, on_device), k in self.host_reads.sites.items()
                                if on_device or not on_gpu],
            "host_read_callers": self._callers(on_gpu),
            "measured_windows": len(windows),
            "step_times_ms": self._step_times(windows),
            "losses": [float(x) for x in _to_host(torch, self.losses)],
            "checksums": self._checksums_on_host(),
            "parameter_names": self._parameter_names(),
        }
        result["syncs"] = self._sync_summary()
        return result

    def _callers(self, on_gpu: bool) -> list:
        """[file, line, method, windows it was read in, [[file, line, function], ...]] per site: the windows tell
        a read made every step from one made once (after the loop, in a periodic log); the chain is the most
        frequent one of user frames above the read."""
        reads = self.host_reads
        return [[f, line, name, reads.site_windows[site],
                 [list(frame) for frame in reads.callers[site].most_common(1)[0][0]] if reads.callers.get(site) else []]
                for site in reads.sites for f, line, name, on_device in [site] if on_device or not on_gpu]

    def _loop_on_gpu(self) -> bool:
        torch = self.torch
        if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
            return False
        if self.profiled_events is not None:
            return any(self.profiled_events.get(name) for name in LAUNCH_CALLS) or self.sync_warnings > 0
        return self.host_reads.device_count > 0 or torch.cuda.memory_allocated() > 0

    def _checksums_on_host(self) -> list:
        """[optimizer index, [[L1 norms], [L2 norms]]] per optimizer step, in step order."""
        by_optimizer: dict[int, list] = {}
        for which, c in self.checksums:
            by_optimizer.setdefault(which, []).append(c)
        on_host = {which: iter(_to_host(self.torch, rows)) for which, rows in by_optimizer.items()}
        return [[which, next(on_host[which]).tolist()] for which, _ in self.checksums]

    def _parameter_names(self) -> list[list[str]]:
        """Dotted names for each optimizer's parameters, from the largest live module that holds them."""
        import gc

        if not self.optimizers:
            return []
        modules = [o for o in gc.get_objects() if isinstance(o, self.torch.nn.Module)]
        modules.sort(key=lambda m: -len(list(m.parameters())))
        names: dict[int, str] = {}
        for module in modules:
            for name, param in module.named_parameters():
                names.setdefault(id(param), name)
        return [[names.get(id(p), f"#{i}") for i, p in enumerate(p for g in o.param_groups for p in g["params"])]
                for o in self.optimizers]

    def steps_so_far(self) -> int:
        return len(self.host_counts)

    def _step_times(self, windows: list[int]) -> dict:
        timed = windows
        source = "host clock"
        if self.events and all(e is not None for e in self.events[-len(windows):] or [None]):
            source = "CUDA events"
            if self.profile_window is not None:
                timed = [i for i in windows if i > self.profile_window[1] + 1]
        times = []
        for i in timed:
            if source == "CUDA events" and self.events[i - 1] is not None:
                times.append(self.events[i - 1].elapsed_time(self.events[i]))
            else:
                times.append((self.clock[i] - self.clock[i - 1]) * 1000.0)
        return {"source": source, "windows": timed, "ms": times}

    def _sync_summary(self) -> dict:
        if self.profile_window is None:
            return {"source": None}
        first, last = self.profile_window
        windows = max(0, last - first + 1)
        out = {"windows": windows, "first_window": first, "sync_warnings": self.sync_warnings}
        events = self.profiled_events
        launched = events is not None and any(events.get(name) for name in LAUNCH_CALLS)
        if events is not None and not launched and not self.sync_warnings:
            return {"source": None, "note": "the profiled steps launched no CUDA kernel: the loop runs on the CPU"}
        if launched:
            out["source"] = "profiler"
            out["by_call"] = {name: events[name] for name in SYNC_CALLS if events.get(name)}
            out["count"] = sum(out["by_call"].values())
        else:  # the profiler saw no CUDA runtime call (no CUPTI here): fall back on PyTorch's sync warnings
            out["source"] = "sync-debug warnings"
            out["count"] = self.sync_warnings
            if hasattr(self, "profiler_error"):
                out["profiler_error"] = self.profiler_error
        return out


_END_MARKER = "gpulint::verify::window_end"


def _calls_before_marker(events) -> Counter:
    """Names of the events recorded before the end-of-window marker."""
    events = list(events)
    end = next((e.time_range.start for e in events if e.name == _END_MARKER), None)
    return Counter(e.name for e in events if e.name != _END_MARKER and (end is None or e.time_range.start < end))


def _local(param):
    """The shard a process owns (DTensor/FSDP): norms of the whole tensor would need a collective."""
    local = getattr(param, "_local_tensor", None)
    return param.detach() if local is None else local.detach()


def _norms(torch, params, order):
    try:
        return list(torch._foreach_norm(params, order, dtype=torch.float32))
    except (AttributeError, TypeError, RuntimeError):
        return [torch.linalg.vector_norm(p.float(), order) for p in params]


def _stack(torch, tensors: list):
    try:
        return torch.stack(tensors)
    except RuntimeError:  # parameters on several devices: gather on the first (device-to-device, no sync)
        return torch.stack([t.to(tensors[0].device) for t in tensors])


def _to_host(torch, tensors: list) -> list:
    """One copy per device for a list of same-shaped device tensors."""
    if not tensors:
        return []
    try:
        return list(torch.stack(tensors).cpu())
    except RuntimeError:  # different devices or shapes
        return [t.cpu() for t in tensors]
