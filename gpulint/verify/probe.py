"""The probe: `python -m gpulint.verify.probe CONFIG.json` runs the user's script as `__main__` after
seeding every generator, turning on deterministic algorithms and installing the recorders; it writes what it
measured to a JSON file per rank, also when the script crashes or is stopped at the step limit.

It runs inside the user's process, so it imports only the standard library and torch (plus gpulint's fixer for
the in-memory fixed program), and it never prints to stdout: stdout belongs to the script.
"""

from __future__ import annotations

import io
import json
import linecache
import os
import random
import sys
import time
import traceback
import types
import warnings

MAX_PRINTED = 1 << 20  # characters of stdout kept for the comparison


class SetupError(Exception):
    """The probe cannot run the script as asked (`--device cuda` without CUDA): one line, no traceback."""


class _Tee(io.TextIOBase):
    """sys.stdout that also keeps what the script prints (per process, so per rank under torchrun)."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self.kept: list[str] = []
        self.line_steps: list[int] = []  # steps done when each kept line began
        self.steps_so_far = lambda: 0
        self._size = 0
        self._line_start = True

    def write(self, text: str) -> int:
        if self._size < MAX_PRINTED:
            self.kept.append(text)
            self._size += len(text)
            for piece in text.splitlines(keepends=True):
                if self._line_start:
                    self.line_steps.append(self.steps_so_far())
                self._line_start = piece.endswith(("\n", "\r"))
        return self._stream.write(text)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _seed(seed: int) -> None:
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:
        pass
    import torch

    torch.manual_seed(seed)  # every device's generator too


class _SeedOffset:
    """Noise run k of the original (`--noise-runs`) must differ from run 0 even when the program seeds itself
    (`torch.manual_seed(0)` at the top of a script undoes the probe's seed): every seed the program sets through
    torch.manual_seed (= torch.random.manual_seed), torch.cuda.manual_seed(_all), torch.Generator.manual_seed,
    random.seed, numpy.random.seed and numpy.random.default_rng gets `offset` added. Offset 0 (the timing runs,
    the fixed program) changes nothing. Seeds that are not integers (None, strings) pass through unchanged. A seed
    function called from inside another one (torch.manual_seed seeds the CUDA generators itself), or from
    torch's own code (a DataLoader's sampler seeds a fresh Generator each epoch from the global one, already
    offset), is left alone. `calls` counts what the program set, for the report."""

    def __init__(self, torch, offset: int) -> None:
        self.torch = torch
        self.offset = offset
        self.calls: dict[str, int] = {}
        self._depth = 0

    def wrap(self, name: str, function):
        def seeded(seed=None, *args, **kwargs):
            if seed is None and kwargs:
                seed = kwargs.pop("seed", kwargs.pop("a", None))  # random.seed(a=...), default_rng(seed=...)
            if self._depth == 0 and not _from_torch(sys._getframe(1)):
                self.calls[name] = self.calls.get(name, 0) + 1
                if self.offset and _integral(seed):
                    seed = int(seed) + self.offset
            self._depth += 1
            try:
                return function(seed, *args, **kwargs)
            finally:
                self._depth -= 1

        seeded.__doc__, seeded.__name__ = function.__doc__, getattr(function, "__name__", name)
        return seeded

    def install(self) -> None:
        torch = self.torch
        seed_torch = self.wrap("torch.manual_seed", torch.random.manual_seed)
        torch.manual_seed = torch.random.manual_seed = seed_torch
        for name in ("manual_seed", "manual_seed_all"):
            setattr(torch.cuda, name, self.wrap(f"torch.cuda.{name}", getattr(torch.cuda, name)))
        random.seed = self.wrap("random.seed", random.seed)
        try:
            import numpy.random
        except ImportError:
            pass
        else:
            numpy.random.seed = self.wrap("numpy.random.seed", numpy.random.seed)
            numpy.random.default_rng = self.wrap("numpy.random.default_rng", numpy.random.default_rng)
        if self.offset:  # the timing runs keep torch's own class
            torch.Generator = _offset_generator(torch.Generator, self)


def _offset_generator(base, offset: _SeedOffset):
    """torch.Generator's subclass whose manual_seed adds the offset. torch's kernels and DataLoader accept it as a
    Generator; isinstance(x, torch.Generator) stays true of generators torch made itself (its default ones)."""

    class GeneratorType(type(base)):
        def __instancecheck__(cls, obj):
            return isinstance(obj, base)

        def __subclasscheck__(cls, sub):
            return issubclass(sub, base)

    class Generator(base, metaclass=GeneratorType):
        def manual_seed(self, seed):
            if _from_torch(sys._getframe(1)):
                return super().manual_seed(seed)
            return offset.wrap("torch.Generator.manual_seed", super().manual_seed)(seed)

    Generator.__module__, Generator.__qualname__ = "torch", "Generator"
    return Generator


_TORCH_WRAPPERS = ("torch._dynamo", "torch._compile")  # torch wraps torch.manual_seed in a dynamo-disabling shim


def _from_torch(frame) -> bool:
    """Whether torch's own code made the call (its decorators around a seed function do not count)."""
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith(_TORCH_WRAPPERS):
        frame = frame.f_back
    return frame is not None and str(frame.f_globals.get("__name__", "")).split(".")[0] == "torch"


def _integral(seed) -> bool:
    try:
        return not isinstance(seed, (bool, float, str, bytes, bytearray)) and seed is not None and \
            int(seed) == seed
    except (TypeError, ValueError):
        return False


def _deterministic(torch) -> None:
    """Same kernels, same results in both runs where the device allows; warn (do not fail) where it cannot."""
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True


def _device_info(torch, wanted: str) -> dict:
    cuda = torch.cuda.is_available()
    info = {"torch": torch.__version__, "cuda_available": cuda}
    if wanted == "cuda" and not cuda:
        raise SetupError("--device cuda: CUDA is not available to this PyTorch")
    if cuda:
        info["gpu"] = torch.cuda.get_device_name()
    return info


def _count_sync_warnings(recorder) -> None:
    from gpulint.verify.steps import SYNC_WARNING

    warnings.filterwarnings("always", message=SYNC_WARNING)
    show = warnings.showwarning

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if SYNC_WARNING in str(message) and recorder.saw_sync_warning():
            return
        show(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning


def _run_script(config: dict, fixer) -> None:
    path = os.path.abspath(config["script"])
    with open(path, "rb") as handle:
        import importlib.util

        text = importlib.util.decode_source(handle.read())
    if fixer is not None:
        text = fixer.fix(text, path)
        # Tracebacks show the lines that ran, not the file on disk (mtime None: linecache keeps them).
        linecache.cache[path] = (len(text), None, text.splitlines(True), path)
    code = compile(text, path, "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__dict__.update({"__file__": path, "__builtins__": __builtins__, "__cached__": None})
    sys.modules["__main__"] = module
    sys.argv = [config["script"], *config["args"]]
    sys.path[0] = os.path.dirname(path)
    exec(code, module.__dict__)


def main(config_path: str) -> int:
    with open(config_path, encoding="utf-8") as handle:
        config = json.load(handle)
    rank = int(os.environ.get("RANK", "0"))
    result_path = os.path.join(config["results"], f"rank{rank}.json")
    with open(os.path.join(config["results"], f"pid{rank}"), "w") as handle:
        handle.write(str(os.getpid()))
    result: dict = {"rank": rank, "world_size": int(os.environ.get("WORLD_SIZE", "1")), "status": "ok"}
    started = time.perf_counter()
    recorder = fixer = seeds = None
    tee = _Tee(sys.stdout)
    try:
        import torch

        result["torch"] = torch.__version__
        _seed(config["seed"])
        seeds = _SeedOffset(torch, int(config.get("seed_offset") or 0))
        seeds.install()
        if config.get("deterministic", True):
            _deterministic(torch)
        result.update(_device_info(torch, config["device"]))
        from gpulint.verify.hostreads import HostReads
        from gpulint.verify.steps import StepRecorder, StopRun

        reads = HostReads(torch)
        reads.install()
        recorder = StepRecorder(torch, reads, max_steps=config["max_steps"], warmup=config["warmup"],
                                profile_steps=config["profile_steps"],
                                progress_path=os.path.join(config["results"], f"progress{rank}")
                                if config.get("progress") else "")
        recorder.install()
        tee.steps_so_far = recorder.steps_so_far
        _count_sync_warnings(recorder)
        if config.get("fix"):
            from gpulint.verify.fixing import Fixer

            fixer = Fixer(config["root"], unsafe=config["fix"] == "unsafe")
            fixer.install()
        sys.stdout = tee
        try:
            _run_script(config, fixer)
        except StopRun:
            result["status"] = "stopped"
        except SystemExit as exc:
            code = exc.code
            if code not in (None, 0):
                result.update(status="error", error=f"the script exited with status {code}", exit_code=code)
    except BaseException as exc:  # the script's own failure: reported, then the child fails like the script
        result.update(status="error", error=_one_line(exc),
                      traceback=None if isinstance(exc, SetupError) else _user_traceback(exc))
    finally:
        sys.stdout = tee._stream
        sys.stdout.flush()
    result["seconds"] = time.perf_counter() - started
    result["printed"] = "".join(tee.kept)
    result["printed_line_steps"] = tee.line_steps
    if seeds is not None:
        result["seeds_set"] = seeds.calls
        result["seed_offset"] = seeds.offset
    if fixer is not None:
        result["fixed_modules"] = fixer.changed
        result["fix_errors"] = fixer.errors
    if recorder is not None:
        try:
            result.update(recorder.finish())
        except BaseException as exc:  # e.g. the device is in an error state after the script's crash
            result.setdefault("probe_error", _one_line(exc))
    with open(result_path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    os.replace(result_path + ".tmp", result_path)
    if result["status"] == "error":
        sys.stderr.write(result.get("traceback") or result["error"] + "\n")
        return 1
    return 0


def _user_traceback(exc: BaseException) -> str:
    """The traceback from the script's first frame on: the probe's own frames say nothing to the user."""
    here = os.path.dirname(os.path.abspath(__file__))
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None and tb.tb_frame.f_code.co_filename.startswith(here):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    if isinstance(exc, SetupError):
        return text[0]
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
