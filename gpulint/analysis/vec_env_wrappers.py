"""A project's vectorised-environment wrapper runs its `step_async`/`step_wait` on every environment step.

Reinforcement-learning trainers wrap a library's vectorised environment to hand tensors to the policy
(ikostrikov's pytorch-a2c-ppo-acktr-gail `VecPyTorch(VecEnvWrapper)`):

    class VecPyTorch(VecEnvWrapper):              # envs.py
        def step_async(self, actions):
            self.venv.step_async(actions.cpu().numpy())   # a device read every environment step
        def step_wait(self):
            obs, reward, done, info = self.venv.step_wait()
            return torch.from_numpy(obs).float().to(self.device), ...

    envs = make_vec_envs(...)                     # main.py: a project factory returning the wrapper
    for step in range(num_steps):
        obs, reward, done, infos = envs.step(action)

The library's `VecEnv.step(actions)` (stable-baselines3, OpenAI baselines) is `step_async(actions)` then
`step_wait()`, so a hot loop's `envs.step(...)` runs both methods of the project wrapper every iteration. Known
from the library's documented protocol, not from its code (the library is not read). The instance is resolved on
the caller's side: a name every binding of which builds the wrapper class itself, or calls a project factory
whose returned name is bound only to project wrappers of library vectorised environments, one of them this class
(a factory stacks them conditionally: `envs = VecPyTorch(envs, device)`, then `VecPyTorchFrameStack(envs, ...)`
for image observations, which forwards its own `step_wait` to the wrapper it holds through `self.venv`).
Bounded like the other searches: callers read as `forward.hot_callers` reads them (files whose text names `step`,
at most `forward._CALLERS_PER_QUESTION` callers with hot loops).
"""

from __future__ import annotations

import ast

from gpulint import ast_walk
from pathlib import Path

import libcst as cst

# the library classes whose `step(actions)` is `step_async(actions)` then `step_wait()`
_VEC_ENV_BASES = frozenset(
    f"{package}.{name}"
    for package in ("stable_baselines3.common.vec_env", "stable_baselines3.common.vec_env.base_vec_env",
                    "baselines.common.vec_env", "baselines.common.vec_env.vec_env")
    for name in ("VecEnv", "VecEnvWrapper"))
_MEMBERS = frozenset(("step_async", "step_wait"))


def vec_env_site(project, path: Path, owner: str, member: str):
    """The hot `X.step(...)` call that runs `owner.member` (`step_async`/`step_wait` of a project subclass of a
    library vectorised environment, defined in `path`) every iteration; None when none is found."""
    if member not in _MEMBERS:
        return None
    from gpulint.analysis.forward import _remembered, _resolved

    path = _resolved(project, path)
    return _remembered(project, ("vec env step", path, owner, member), lambda: _find(project, path, owner, member))


def is_vec_env_wrapper(project, cls) -> bool:
    """`cls` derives, through project classes, from a library vectorised environment (`VecEnvWrapper`)."""
    from gpulint.analysis.hierarchy import project_bases
    from gpulint.analysis.project import ClassSummary

    for current in (cls, *project_bases(project, cls)):
        for base in current.bases:
            if not base or isinstance(project.lookup(current.path, base), ClassSummary):
                continue
            if project.external_name(current.path, base) in _VEC_ENV_BASES:
                return True
    return False


def _find(project, path: Path, owner: str, member: str):
    from gpulint.analysis.forward import CallSite, _line_of, hot_callers

    info = project.module(path)
    cls = info.classes.get(owner) if info is not None else None
    if cls is None or member not in cls.methods or not is_vec_env_wrapper(project, cls):
        return None
    for analysis, calls, hot_calls, _ in hot_callers(project, path, "step"):
        for _, node, func in hot_calls:
            if type(func) is cst.Attribute and func.attr.value == "step" and type(func.value) is cst.Name \
                    and _holds_wrapper(project, analysis, calls, func.value, cls):
                return CallSite(analysis.path, _line_of(analysis, node), f"{analysis.code(node.func)}(...)",
                                f"{cls.name}.{member}")
    return None


def _holds_wrapper(project, analysis, calls, name: cst.Name, cls) -> bool:
    """Every binding of `name` builds `cls` or calls a project factory whose returned name one of its
    assignments binds to `cls` (`_factory_wrappers`: the wrappers it stacks; `cls` is a vectorised environment,
    and so is whatever wraps it, each one's `step` running the protocol)."""
    from gpulint.analysis.project import ClassSummary, FunctionSummary
    from gpulint.analysis.hierarchy import same_class

    bindings = analysis.index.visible_bindings(name)
    if not bindings or len(bindings) > 4:
        return False
    for b in bindings:
        if b.kind != "assign" or b.index is not None or type(b.value) is not cst.Call:
            return False
        found = calls._lookup(b.value.func)
        if isinstance(found, ClassSummary):
            if not same_class(found, cls):
                return False
        elif isinstance(found, FunctionSummary):
            stack = _factory_wrappers(project, found)
            if not any(same_class(c, cls) for c in stack):
                return False
        else:
            return False
    return True


def _factory_wrappers(project, summary) -> list:
    """The project classes a top-level function builds into the one name it returns (`envs = VecPyTorch(envs,
    device)` ... `return envs`); empty when it returns anything else."""
    from gpulint.analysis.project import ClassSummary, _dotted

    info = project.module(summary.path)
    fn = info.functions.get(summary.qualname) if info is not None else None
    if not isinstance(fn, ast.FunctionDef):
        return []
    returns = [n for n in ast_walk.walk(fn) if isinstance(n, ast.Return)]
    if not returns or not all(isinstance(r.value, ast.Name) for r in returns) \
            or len({r.value.id for r in returns}) != 1:
        return []
    returned = returns[0].value.id
    found: list = []
    for node in ast_walk.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id == returned and isinstance(node.value, ast.Call):
            target = project.lookup(summary.path, _dotted(node.value.func) or "")
            if isinstance(target, ClassSummary):
                found.append(target)
    return found
