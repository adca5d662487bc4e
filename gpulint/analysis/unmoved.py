"""Batch elements a loop leaves in host memory.

`for _, imgs, targets in loader:` then `imgs = imgs.type(torch.cuda.FloatTensor)` (or `.to(device)`, `.cuda()`):
the loop moves one element of each batch to the accelerator itself, so the loader hands out host tensors; an
element of the same batch that the loop never moves (`targets[:, 1].tolist()`, `metrics(outputs, targets)`) is
still a host tensor, and reading it waits for no GPU. Asked by `KindInference.on_host`, so a rule that reports
reads of device tensors stays quiet on it.

Only a `for` over a loader (directly or through `enumerate`/`tqdm`/`iter`), with the name bound by nothing but
the loop's unpacking (and rebindings that keep the element off the accelerator, `rebinds_itself_off_device`:
`targets = targets.detach().cpu().numpy()`), and with a sibling element visibly moved in the loop body, counts:
without that evidence the loader may yield device batches (Accelerate's `prepare`, a collate that moves), and
nothing is assumed. The same evidence decides for an item of a dataset (or any indexed object that is no tensor)
unpacked in a loop, `image1, image2, flow_gt, _ = dataset[i]`, of which the loop moves `image1` only.

A sibling read with a bare `.numpy()` (`feats.numpy()`, no `.cpu()` before it) is the same evidence the other way
round: `Tensor.numpy()` raises on a CUDA tensor, so the loader hands out host tensors (an ONNX Runtime loop that
never moves anything, `keys = batch['keys']` then formatted into the result file). And the loop's whole batch
unpacked in its body, `key, feat, target = batch`, counts as the loop's own unpacking.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from gpulint.analysis.progress_wrappers import is_progress_wrapper
import libcst as cst

from gpulint.analysis.imports import dotted_name
from gpulint.syntax import code_of, target_names

if TYPE_CHECKING:
    from gpulint.analysis.kinds import KindInference

# Iteration wrappers whose elements are the loader's batches, unchanged (`zip` pairs them: left out).
_SAME_ELEMENTS = frozenset({"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter", "islice",
                            "itertools.islice"})
_DEVICE_WORDS = ("cuda", "device", "gpu")


def unmoved_loader_element(kinds: "KindInference", name: cst.Name) -> bool:
    """`name` is an element of a loader's batch that its loop never moves while moving a sibling element.

    Asked again for the same read while deciding it (`x = x + gate * cache[3]`, where `cache` holds `x`: whether
    `x` rebinds itself off the device asks the kind of `cache[3]`, which asks where `x` lives), the inner question
    is answered no: the loop otherwise went round until Python's recursion limit and the file went unchecked."""
    busy = _cache(kinds).setdefault("busy", set())
    if id(name) in busy:
        return False
    busy.add(id(name))
    try:
        return _unmoved_loader_element(kinds, name)
    finally:
        busy.discard(id(name))


def _unmoved_loader_element(kinds: "KindInference", name: cst.Name) -> bool:
    bindings = kinds.index.visible_bindings(name)
    if len(bindings) > 1:
        # `for img, scale in loader: scale = at.scalar(scale)`: the loop binds `scale` afresh before the statement
        # on every pass, so the statement's own binding never reaches the read on its right-hand side
        ancestors = [a for a in kinds.index.ancestors(name)]
        if any(b.kind == "for" and any(a is b.source for a in ancestors) for b in bindings):
            bindings = [b for b in bindings if b.kind == "for" or not any(a is b.source for a in ancestors)]
    if len(bindings) > 1:  # `target = target.detach().cpu().numpy()` each batch: still the loader's host element
        bindings = [b for b in bindings if not (b.kind == "assign" and b.index is None and b.value is not None and
                                                rebinds_itself_off_device(kinds, name.value, b.value))]
    if len(bindings) > 1:  # `pad_w = int(pad_w)`: a Python number from then on, never on an accelerator
        bindings = [b for b in bindings if not (b.kind == "assign" and b.index is None and _python_number_of(
            b.value, name.value))]
    if len(bindings) != 1:
        return False
    b = bindings[0]
    if b.kind == "assign" and _part_of_unmoved(kinds, b.value, name.value):
        return True  # `pad_w, pad_h = shapes[0][1][1]` of an element `shapes` the loop never moves
    if b.kind == "assign" and b.index is None and _next_of_a_loader(kinds, b.value):
        return _unmoved_next_batch(kinds, name, b.value)
    if b.kind == "assign" and b.index is None:
        return _unmoved_indexed_element(kinds, name, b.value)
    if b.kind == "assign" and b.index is not None and type(b.value) is cst.Call:
        # `X, offsets, T = unpack_batch(batch)`: a part of the batch a module helper hands back
        hook = kinds.unpacked_part_hook
        return hook is not None and hook(name, b)
    if b.kind == "assign" and type(b.source) is cst.Assign and type(b.value) is cst.Name:
        return _unmoved_unpacked_batch(kinds, name, b)  # `key, feat, target = batch` of `for batch in loader`
    if b.kind == "assign" and type(b.source) is cst.Assign:
        return _unmoved_item_element(kinds, name, b)  # `image1, image2, flow_gt, _ = dataset[i]`
    if b.kind != "for" or b.index is None or type(b.source) is not cst.For:
        return False
    loop: cst.For = b.source
    cache = _cache(kinds)
    key = (id(loop), name.value)
    found = cache.get(key)
    if found is None:
        found = cache[key] = _decide(kinds, loop, name.value)
    return found


# Methods whose result stays where the receiver is, or goes to the host (`.cpu()`, `.numpy()`).
_OFF_DEVICE = frozenset({"detach", "cpu", "numpy", "clone", "astype", "float", "long", "half", "int", "double",
                         "bool", "squeeze", "unsqueeze", "flatten", "view", "reshape", "contiguous", "permute"})


def _python_number_of(value: Optional[cst.BaseExpression], name: str) -> bool:
    """`int(pad_w)`, `float(ratio)`: the name's own value made a Python number."""
    return type(value) is cst.Call and type(value.func) is cst.Name and value.func.value in ("int", "float") and \
        len(value.args) == 1 and type(value.args[0].value) is cst.Name and value.args[0].value.value == name


def _part_of_unmoved(kinds: "KindInference", value: Optional[cst.BaseExpression], name: str) -> bool:
    """`shapes[0][1][1]`: what is indexed out of a loader element the loop leaves in host memory (a collate
    function's per-sample metadata, `for img, target, paths, shapes in loader:` moving `img` only) is in host
    memory too."""
    if type(value) is not cst.Subscript:
        return False
    while type(value) is cst.Subscript:
        value = value.value
    if type(value) is not cst.Name or value.value == name:
        return False
    return unmoved_loader_element(kinds, value)  # `a = b[0]` and `b = a[0]`: its re-entry guard cuts the cycle


def rebinds_itself_off_device(kinds: "KindInference", name: str, value: cst.BaseExpression) -> bool:
    """`masks = masks.flatten(1).to(torch.bool)`, `target = target.detach().cpu().numpy()`, `y = y.data.cpu()`,
    `valid = valid * (speed < 400)`: the name's own value converted, reshaped, copied to the host or combined with
    host values and numbers, never sent to an accelerator (no `.cuda()`, no `.to(` a device other than the CPU)."""
    from gpulint.analysis.kinds import Kind, _dtype_only, _names_cpu, _reads_name

    while True:
        if type(value) is cst.Attribute and value.attr.value == "data":
            value = value.value
        elif type(value) is cst.BinaryOperation and not _reads_name(value.right, name) and (
                kinds.of(value.right) is Kind.NUMBER or _on_host_once(kinds, name, value.right)):
            value = value.left  # `valid = valid * (speed < max_flow)`: masked by a host value, still on the host
        elif type(value) is cst.Call and type(value.func) is cst.Attribute and (
                value.func.attr.value in _OFF_DEVICE or value.func.attr.value == "to" and
                (_dtype_only(kinds, value) or _names_cpu(kinds, value))):
            value = value.func.value
        else:
            return type(value) is cst.Name and value.value == name


def _cache(kinds: "KindInference") -> dict:
    cache = getattr(kinds, "_unmoved_cache", None)
    if cache is None:
        cache = kinds._unmoved_cache = {}  # type: ignore[attr-defined]
    return cache


def _decide(kinds: "KindInference", loop: cst.For, name: str) -> bool:
    if not _iterates_a_loader(kinds, loop.iter) and not _unknown_batches(kinds, loop.iter):
        return False
    if _moved_in(kinds, loop, name):
        return False
    return any(_moved_in(kinds, loop, other) or _read_as_host_array(kinds, loop, other)
               for other in target_names(loop.target) if other != name)


# Methods that keep a tensor where it is (and its type a tensor) before a `.numpy()` read.
_SAME_PLACE = frozenset({"float", "double", "long", "int", "half", "bool", "contiguous", "detach", "squeeze",
                         "unsqueeze", "view", "reshape", "permute", "clone", "flatten", "data"})


def _uses_in(kinds: "KindInference", loop: cst.For, name: str):
    """The `Name` nodes reading `name` inside `loop`, from the kind inference's index."""
    span = kinds.index.subtree(loop)
    if span is None:
        return
    for node, place in zip(kinds.index.names(name), kinds.index.name_places(name)):
        if place is not None and span[0] <= place <= span[1]:
            yield node


def _read_as_host_array(kinds: "KindInference", loop: cst.For, name: str) -> bool:
    """Some use of `name` inside the loop is a bare `name.numpy()` (through same-place conversions only, no
    `.cpu()`, no move): `Tensor.numpy()` raises on a CUDA tensor, so the element, and the batch it came with, is
    in host memory."""
    up = kinds.index.up
    for node in _uses_in(kinds, loop, name):
        current: cst.CSTNode = node
        while True:
            parent = up.get(id(current))
            if type(parent) is not cst.Attribute or parent.value is not current:
                break
            method = parent.attr.value
            call = up.get(id(parent))
            if method == "data":  # `x.data.numpy()`
                current = parent
                continue
            if type(call) is not cst.Call or call.func is not parent:
                break
            if method == "numpy" and not call.args:
                return True
            if method not in _SAME_PLACE:
                break
            current = call
    return False


def _unmoved_unpacked_batch(kinds: "KindInference", name: cst.Name, b) -> bool:
    """`for batch_idx, batch in enumerate(loader):` then `key, feat, target = batch`: the loop's own unpacking,
    written in its body; decided as `for key, feat, target in loader` is (a sibling moved, or read as a host
    array, and `name` never moved)."""
    assign = b.source
    if len(assign.targets) != 1 or type(assign.targets[0].target) not in (cst.Tuple, cst.List):
        return False
    binding = _loop_binding(kinds.index.visible_bindings(b.value))
    if binding is None:
        return False
    loop: cst.For = binding.source
    if not _whole_batch(loop, binding.index) or not _iterates_a_loader(kinds, loop.iter):
        return False
    if kinds.index.subtree(loop) is None or not any(a is loop for a in kinds.index.ancestors(assign)):
        return False
    siblings = [n for n in target_names(assign.targets[0].target) if n != name.value]
    cache = _cache(kinds)
    key = (id(loop), id(assign), name.value)
    found = cache.get(key)
    if found is None:
        found = cache[key] = bool(siblings) and not _moved_in(kinds, loop, name.value) and any(
            _moved_in(kinds, loop, other) or _read_as_host_array(kinds, loop, other) for other in siblings)
    return found


def _iterates_a_loader(kinds: "KindInference", iterable: cst.BaseExpression, depth: int = 0) -> bool:
    from gpulint.analysis.kinds import Kind
    if depth > 4:
        return False
    iterable = kinds.wrapper_bound_to(iterable)
    if type(iterable) is cst.Call:
        fn = dotted_name(iterable.func)
        # `metric_logger.log_every(loader, print_freq, header)`: the MetricLogger of torchvision's reference
        # scripts (copied into DETR, DeiT, MAE, DINO, BLIP...) yields the iterable's items unchanged while it logs
        logs = type(iterable.func) is cst.Attribute and iterable.func.attr.value == "log_every"
        if fn not in _SAME_ELEMENTS and not logs and not is_progress_wrapper(fn):
            return False
        args = [a.value for a in iterable.args if a.keyword is None and not a.star]
        return bool(args) and _iterates_a_loader(kinds, args[0], depth + 1)
    return kinds.of(iterable) is Kind.LOADER


def _moved_in(kinds: "KindInference", loop: cst.For, name: str) -> bool:
    """Some use of `name` inside the loop copies it to the accelerator (or hands it to a helper that may)."""
    span = kinds.index.subtree(loop)
    if span is None:
        return True  # unsure: treat as moved, so nothing is decided
    first, last = span
    up = kinds.index.up
    for node, place in zip(kinds.index.names(name), kinds.index.name_places(name)):
        if place is None or not first <= place <= last:
            continue
        parent = up.get(id(node))
        if type(parent) is cst.Attribute and parent.value is node:
            parent = _past_conversions(kinds, parent)  # `batch_x.float().to(device)`: converted, then moved
            call = up.get(id(parent))
            if type(call) is cst.Call and call.func is parent and (
                    _moving_method(kinds, parent.attr.value, call) or parent.attr.value in ("items", "values")):
                return True  # moved, or its entries are iterated (and may be moved one by one)
        elif type(parent) in (cst.For, cst.CompFor) and parent.iter is node:
            return True  # `for t in targets:` may move each element
        elif type(parent) is cst.Subscript and parent.value is node:
            method = up.get(id(parent))
            if type(method) is cst.Attribute and method.value is parent and _whole_view(parent):
                method = _past_conversions(kinds, method)  # `image[None].cuda()`: all of it moved
                call = up.get(id(method))
                if type(call) is cst.Call and call.func is method and \
                        _moving_method(kinds, method.attr.value, call):
                    return True
            # `meta[key] = val.cuda()`, `inputs[i] = inputs[i].cuda()`: moved entry by entry
            target = up.get(id(parent))
            assign = up.get(id(target)) if type(target) is cst.AssignTarget else None
            if type(assign) is cst.Assign and _holds_a_move(kinds, assign.value):
                return True
        elif type(parent) is cst.Arg:
            call = up.get(id(parent))
            if type(call) is cst.Call and _moving_helper(call):
                return True
        if _built_into_a_move(kinds, node):
            return True
    return False


# Nodes through which a tensor expression is built from its parts (`torch.cat([1 - m[:, i], m[:, i]], 0)`).
_BUILDING = (cst.Subscript, cst.SubscriptElement, cst.Index, cst.Slice, cst.Element, cst.List, cst.Tuple,
             cst.BinaryOperation, cst.UnaryOperation, cst.Arg)


def _built_into_a_move(kinds: "KindInference", node: cst.Name) -> bool:
    """`torch.cat([1 - torch.sum(msk[:, i], dim=0), msk[:, i]], 0).cuda()`: `node` is a part of a tensor that torch
    functions, indexing and arithmetic build on the host and the expression then moves, so the element it reads
    is a host tensor moved piece by piece. Only through `torch.*` calls (a model's or helper's output moved says
    nothing of its inputs)."""
    up = kinds.index.up
    current: cst.CSTNode = node
    through_torch = False
    for _ in range(12):
        parent = up.get(id(current))
        if type(parent) is cst.Attribute and parent.value is current:
            if not through_torch:
                return False
            method = _past_conversions(kinds, parent)
            call = up.get(id(method))
            return type(call) is cst.Call and call.func is method and _moving_method(kinds, method.attr.value, call)
        if type(parent) is cst.Call:
            if current is parent.func or not (dotted_name(parent.func) or "").startswith("torch."):
                return False
            through_torch = True
        elif type(parent) not in _BUILDING:
            return False
        current = parent
    return False


def _on_host_once(kinds: "KindInference", name: str, value: cst.BaseExpression) -> bool:
    """`kinds.on_host(value)`, not asked again for `name` while it is answered (the value's names may lead back
    to `name`'s own bindings)."""
    asking = kinds.__dict__.setdefault("_rebinding", set())
    if name in asking:
        return False
    asking.add(name)
    try:
        return kinds.on_host(value)
    finally:
        asking.discard(name)


def _whole_view(subscript: cst.Subscript) -> bool:
    """`x[None]`, `x[..., None]`, `x[:, None]`: every element of `x`, with new axes (not `batch["ids"]`, `x[0]`)."""
    for element in subscript.slice:
        index = element.slice
        if type(index) is cst.Slice:
            if index.lower is not None or index.upper is not None or index.step is not None:
                return False
        elif type(index.value) is cst.Name:
            if index.value.value != "None":
                return False
        elif type(index.value) is not cst.Ellipsis:
            return False
    return True


def _past_conversions(kinds: "KindInference", method: cst.Attribute) -> cst.Attribute:
    """The method called last in a chain of same-place conversions starting at `method` (`x.float().contiguous()
    .to(device)`: the `.to`), or `method` itself."""
    from gpulint.analysis.kinds import _CONVERSIONS

    up = kinds.index.up
    while method.attr.value in _CONVERSIONS and method.attr.value not in ("to", "cuda"):
        call = up.get(id(method))
        outer = up.get(id(call))
        if type(call) is not cst.Call or call.func is not method or type(outer) is not cst.Attribute or \
                outer.value is not call:
            break
        method = outer
    return method


def _holds_a_move(kinds: "KindInference", value: cst.BaseExpression) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        if type(node) is cst.Call and type(node.func) is cst.Attribute and \
                _moving_method(kinds, node.func.attr.value, node):
            return True
        if type(node) is cst.Call and _moving_helper(node):
            return True
        stack.extend(n for n in _children(node))
    return False


def _children(node: cst.CSTNode):
    from gpulint.analysis.tree import child_nodes
    return child_nodes(node)


def _moving_method(kinds: "KindInference", method: str, call: cst.Call) -> bool:
    from gpulint.analysis.kinds import _names_cpu
    if method in ("cuda", "pin_memory"):
        return True
    if method == "to":
        return bool(call.args) and not _names_cpu(kinds, call)
    if method == "type":
        # `imgs.type(torch.cuda.FloatTensor)`, or a name bound to it (`Tensor = torch.cuda.FloatTensor if ...`)
        return bool(call.args) and _mentions_device(kinds, call.args[0].value)
    return False


def _mentions_device(kinds: "KindInference", value: cst.BaseExpression) -> bool:
    texts = [code_of(value)]
    if type(value) is cst.Name:
        texts += [code_of(b.value) for b in kinds.index.visible_bindings(value) if b.value is not None]
    return any(word in text.lower() for text in texts for word in _DEVICE_WORDS)


def _moving_helper(call: cst.Call) -> bool:
    """`move_to_device(x, ...)`, `to_cuda(x)`, `x_gpu = gpu(x)`: a helper whose name says it moves."""
    name: Optional[str] = dotted_name(call.func)
    last = (name or "").rsplit(".", 1)[-1].lower()
    return any(word in last for word in _DEVICE_WORDS) or any(
        a.keyword is not None and a.keyword.value == "device" for a in call.args)


def read_before_its_move(kinds: "KindInference", name: cst.Name) -> bool:
    """`name` is the loop's own batch element, read at the top of a loop over a loader before anything in the
    body rebinds it, and the loop moves it to the accelerator later (`points = points.data.numpy()` for host
    augmentation, then `points.cuda()`): the loader hands out host tensors (the later move is the evidence),
    and what is read here is one of them."""
    bindings = kinds.index.visible_bindings(name)
    loops = [b for b in bindings if b.kind == "for" and type(b.source) is cst.For and
             kinds.index.is_ancestor_or_self(b.source.body, name)]  # the loop around the read (of several)
    if len(loops) != 1:
        return False
    loop: cst.For = loops[0].source
    statement: cst.CSTNode = name
    for parent in kinds.index.ancestors(name):
        if parent is loop.body:
            break
        if isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.For, cst.While, cst.ListComp,
                               cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            return False  # a nested scope or loop may see a later rebinding
        statement = parent
    else:
        return False
    if not _iterates_a_loader(kinds, loop.iter):
        return False
    read_at = kinds.index.order(statement)
    span = kinds.index.subtree(loop.body)
    if span is None:
        return False
    for other, place in zip(kinds.index.names(name.value), kinds.index.name_places(name.value)):
        if place is not None and span[0] <= place < read_at and other is not name and \
                not kinds.index.is_ancestor_or_self(statement, other):
            return False  # used earlier in the body (`meta[key] = val.cuda()`): it may be moved already
    for b in bindings:
        if b is loops[0] or b.source is None or not kinds.index.is_ancestor_or_self(loop.body, b.source):
            continue
        if kinds.index.order(b.source) <= read_at and not kinds.index.is_ancestor_or_self(statement, b.source):
            return False  # rebound earlier in the body: the read may see that value
    return _moved_in(kinds, loop, name.value) or _converted_and_moved(kinds, loop, name.value)


_CONVERSIONS = frozenset({"float", "long", "int", "half", "double", "bool", "byte", "contiguous", "transpose",
                          "permute", "view", "reshape", "squeeze", "unsqueeze"})


def _converted_and_moved(kinds: "KindInference", loop: cst.For, name: str) -> bool:
    """Some use of `name` in the loop is copied to the accelerator after dtype or shape methods
    (`points.float().cuda()`, `x.transpose(2, 1).to(device)`)."""
    span = kinds.index.subtree(loop)
    if span is None:
        return False
    first, last = span
    up = kinds.index.up
    for node, place in zip(kinds.index.names(name), kinds.index.name_places(name)):
        if place is None or not first <= place <= last:
            continue
        current: cst.CSTNode = node
        while True:
            attribute = up.get(id(current))
            call = up.get(id(attribute)) if type(attribute) is cst.Attribute else None
            if type(call) is not cst.Call or call.func is not attribute or attribute.value is not current:
                break
            if _moving_method(kinds, attribute.attr.value, call):
                return True
            if attribute.attr.value not in _CONVERSIONS:
                break
            current = call
    return False


def torch_layer(kinds: "KindInference", func: cst.Name) -> bool:
    """`func` is bound only to a torch layer built in place (`upsample = nn.Upsample(size=s)`): called on a host
    tensor it computes on the host (a layer on the GPU would refuse a host input)."""
    bindings = kinds.index.visible_bindings(func)
    if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None or \
            type(bindings[0].value) is not cst.Call:
        return False
    name = kinds.qualified(bindings[0].value.func) or ""
    return name.startswith("torch.nn.") and name.count(".") == 2 and name.split(".")[2][:1].isupper()


def _unmoved_item_element(kinds: "KindInference", name: cst.Name, b) -> bool:
    """`image1, image2, flow_gt, _ = dataset[i]` in a loop that moves `image1` (`image1[None].cuda()`) and never
    moves `flow_gt`: the item (of a dataset, a list of samples...) holds host tensors, as a loader's batch that the
    loop moves part of does, so `flow_gt` is one. Only an unpacking of an indexed object that is no tensor or
    array itself, in the loop that moves the sibling."""
    from gpulint.analysis.kinds import Kind

    value = b.value
    assign = b.source
    if type(value) is not cst.Subscript or type(value.value) is not cst.Name or len(assign.targets) != 1 or \
            kinds.of(value.value) in (Kind.TENSOR, Kind.NUMPY):
        return False
    loop = next((a for a in kinds.index.ancestors(assign) if type(a) in (cst.For, cst.While, cst.FunctionDef)), None)
    if type(loop) not in (cst.For, cst.While):
        return False
    siblings = [n for n in target_names(assign.targets[0].target) if n != name.value]
    if not siblings:
        return False
    cache = _cache(kinds)
    key = (id(loop), id(assign), name.value)
    found = cache.get(key)
    if found is None:
        found = cache[key] = not _moved_in(kinds, loop, name.value) and \
            any(_moved_in(kinds, loop, other) for other in siblings)
    return found


def _unless_none(value: Optional[cst.CSTNode]) -> Optional[cst.CSTNode]:
    """`batch["H"] if "H" in batch else None`: the element (None holds no tensor)."""
    if type(value) is cst.IfExp and type(value.orelse) is cst.Name and value.orelse.value == "None":
        return value.body
    return value


def _element_of(value: Optional[cst.CSTNode]) -> Optional[tuple[str, str]]:
    """`batch[3]`, `batch["H"] if "H" in batch else None`: (the batch's name, the index's text), for a constant
    index."""
    value = _unless_none(value)
    if type(value) is not cst.Subscript or type(value.value) is not cst.Name or len(value.slice) != 1:
        return None
    index = value.slice[0].slice
    if type(index) is not cst.Index or type(index.value) not in (cst.Integer, cst.SimpleString):
        return None
    return value.value.value, code_of(index.value)


def _unmoved_indexed_element(kinds: "KindInference", name: cst.Name, value: Optional[cst.CSTNode]) -> bool:
    """`for batch in loader:` then `videos = batch[0]`, `chunk_nb = batch[3]`, `videos.to(device)`: an element
    taken from the batch by a constant index that the loop never moves, while an element taken the same way from
    the same batch is moved, is still a host tensor (the batch itself is never moved whole)."""
    element = _element_of(value)
    if element is None:
        return False
    batch, index = element
    loops = [b for b in kinds.index.visible_bindings(_unless_none(value).value)]
    if len(loops) != 1 or loops[0].kind != "for" or type(loops[0].source) is not cst.For:
        return False
    loop: cst.For = loops[0].source
    if not _whole_batch(loop, loops[0].index) or not _iterates_a_loader(kinds, loop.iter):
        return False
    cache = _cache(kinds)
    key = (id(loop), name.value)
    found = cache.get(key)
    if found is None:
        found = cache[key] = _decide_indexed(kinds, loop, batch, index, name.value)
    return found


def _next_of_a_loader(kinds: "KindInference", value: Optional[cst.BaseExpression]) -> bool:
    """`next(data_iter)` of `data_iter = iter(loader)` (or `next(iter(loader))`): one batch of a loader."""
    if type(value) is not cst.Call or dotted_name(value.func) != "next" or not value.args:
        return False
    source = value.args[0].value
    if type(source) is cst.Name:
        bindings = kinds.index.visible_bindings(source)
        if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None or \
                bindings[0].value is None:
            return False
        source = bindings[0].value
    if type(source) is cst.Call and dotted_name(source.func) == "iter" and source.args:
        return _iterates_a_loader(kinds, source.args[0].value)
    return False


def _unmoved_next_batch(kinds: "KindInference", name: cst.Name, value: cst.Call) -> bool:
    """`data = next(data_iter)` in a loop that copies the batch's elements into preallocated buffers
    (`im_data.resize_(data[0].size()).copy_(data[0])`) or moves them one by one (`data[0].cuda()`), and never
    moves (nor hands on, nor iterates) the batch itself: the loader hands out host tensors, so what the loop reads
    of the batch (`data[1][0][2].item()`, an image's scale) waits for no GPU (faster-rcnn's `test_net.py`)."""
    loop = next((a for a in kinds.index.ancestors(value) if type(a) in (cst.For, cst.While)), None)
    if loop is None:
        return False
    cache = _cache(kinds)
    key = (id(loop), name.value, "next")
    found = cache.get(key)
    if found is None:
        found = cache[key] = not _moved_in(kinds, loop, name.value) and \
            not _handed_whole(kinds, loop, name.value) and _elements_copied(kinds, loop, name.value)
    return found


def _handed_whole(kinds: "KindInference", loop: cst.CSTNode, name: str) -> bool:
    """The batch itself (not an element of it) is handed to a call, or rebound into another name."""
    up = kinds.index.up
    for node in _uses_in(kinds, loop, name):  # type: ignore[arg-type]
        parent = up.get(id(node))
        if type(parent) is cst.Subscript and parent.value is node:
            continue
        if type(parent) is cst.AssignTarget:
            continue  # `data = next(data_iter)` itself (a second binding is ruled out by the caller)
        if type(parent) is cst.Attribute and parent.attr is node:
            continue  # `im_data.data`: an attribute of that name, not the batch
        return True
    return False


def _elements_copied(kinds: "KindInference", loop: cst.CSTNode, name: str) -> bool:
    """An element of the batch (`data[0]`) is copied into another tensor (`buf.copy_(data[0])`) or moved
    (`data[0].cuda()`, `.to(device)`) in the loop."""
    up = kinds.index.up
    for node in _uses_in(kinds, loop, name):  # type: ignore[arg-type]
        element = up.get(id(node))
        if type(element) is not cst.Subscript or element.value is not node:
            continue
        parent = up.get(id(element))
        if type(parent) is cst.Arg:
            call = up.get(id(parent))
            if type(call) is cst.Call and type(call.func) is cst.Attribute and call.func.attr.value == "copy_":
                return True
        if type(parent) is cst.Attribute and parent.value is element:
            method = _past_conversions(kinds, parent)
            call = up.get(id(method))
            if type(call) is cst.Call and call.func is method and _moving_method(kinds, method.attr.value, call):
                return True
    return False


def _whole_batch(loop: cst.For, index: Optional[int]) -> bool:
    """The loop's target binds the loader's whole batch: `for batch in loader`, `for i, batch in enumerate(loader)`."""
    if index is None:
        return type(loop.target) is cst.Name
    return index == 1 and type(loop.target) is cst.Tuple and len(loop.target.elements) == 2 and \
        type(loop.iter) is cst.Call and dotted_name(loop.iter.func) == "enumerate"


def _decide_indexed(kinds: "KindInference", loop: cst.For, batch: str, index: str, name: str) -> bool:
    if _moved_in(kinds, loop, batch) or _moved_in(kinds, loop, name):
        return False
    siblings = set()
    for node in _straight_statements(loop.body):
        for small in node.body:
            if type(small) is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name:
                element = _element_of(_outer_element(small.value))
                if element is not None and element[0] == batch and element[1] != index:
                    siblings.add(small.targets[0].target.value)
    return any(_moved_in(kinds, loop, other) or _read_as_host_array(kinds, loop, other)
               for other in siblings if other != name) or _sibling_moved_in_place(kinds, loop, batch, index)


def _straight_statements(body: cst.BaseSuite, depth: int = 0):
    """The simple statement lines of a loop body, also those inside its `with` and `if` blocks (`with
    torch.cuda.amp.autocast(): rgb = data["rgb"]`), not those of nested loops or functions."""
    if type(body) is not cst.IndentedBlock or depth > 3:
        return
    for node in body.body:
        if type(node) is cst.SimpleStatementLine:
            yield node
        elif type(node) is cst.With:
            yield from _straight_statements(node.body, depth + 1)
        elif type(node) is cst.If:
            yield from _straight_statements(node.body, depth + 1)


def _outer_element(value: Optional[cst.CSTNode]) -> Optional[cst.CSTNode]:
    """`data["gt"][0]`: the batch's element `data["gt"]` a constant index then narrows (a sibling all the same)."""
    while type(value) is cst.Subscript and type(value.value) is cst.Subscript and len(value.slice) == 1 and \
            type(value.slice[0].slice) is cst.Index and type(value.slice[0].slice.value) is cst.Integer:
        value = value.value
    return value


def _sibling_moved_in_place(kinds: "KindInference", loop: cst.For, batch: str, index: str) -> bool:
    """`batch["input_ids"].to(device)` in the loop: an element of the batch taken by another constant index is
    moved where it is read (DLE BART's `run_eval.py`, whose `ids = batch["ids"]` stays on the host)."""
    up = kinds.index.up
    for node in _uses_in(kinds, loop, batch):
        subscript = up.get(id(node))
        element = _element_of(subscript)
        if element is None or subscript.value is not node or element[1] == index:  # type: ignore[union-attr]
            continue
        method = up.get(id(subscript))
        call = up.get(id(method)) if type(method) is cst.Attribute else None
        if type(call) is cst.Call and call.func is method and _moving_method(kinds, method.attr.value, call):
            return True
    return False


def unpacked_loader_element(analysis, name: cst.Name, binding) -> bool:
    """`for i, batch in enumerate(loader):` then `X, offsets, T, W = unpack_batch(batch)`, where the module's own
    `unpack_batch` returns parts of its parameter (`return b[0], b[1], b[2], b[3]`, or an opaque formatter's
    result on another configuration: `helper_copies.unpacked_element`), and the loop moves a part unpacked beside
    `name` to the accelerator (`X.to(device)`, or a module function that copies it on every call,
    `model_wrap(X, offsets, device)`: `FunctionSummary.moves_params`) but never moves the batch, nor `name`: the
    loader hands out host tensors, and `name` (`T = T.detach().cpu().numpy()` each batch: DLRM's `inference`) is
    one of them."""
    from gpulint.analysis.data_facts import data_facts
    from gpulint.analysis.helper_copies import unpacked_element

    kinds = analysis.kinds
    source = binding.source
    if type(source) is not cst.Assign or len(source.targets) != 1 or type(source.targets[0].target) not in (
            cst.Tuple, cst.List):
        return False
    cache = _cache(kinds)
    key = (id(source), name.value)
    found = cache.get(key)
    if found is not None:
        return found
    cache[key] = False  # asked again while deciding (a helper's summary reading this module): unsure
    facts = data_facts(analysis)
    call: cst.Call = binding.value
    batch = unpacked_element(facts, call, binding.index)
    loop = _batch_loop_of(kinds, batch) if type(batch) is cst.Name else None
    if loop is None:
        return False
    if not _iterates_a_loader(kinds, loop.iter) and not _unknown_batches(kinds, loop.iter):
        return False
    siblings = []
    for position, element in enumerate(source.targets[0].target.elements):  # type: ignore[attr-defined]
        if type(element) is cst.StarredElement:
            return False
        other = element.value
        if position != binding.index and type(other) is cst.Name and unpacked_element(facts, call, position) is batch:
            siblings.append(other.value)
    helper_moved = {a.value for node in _walk(loop.body) if type(node) is cst.Call
                    for a in facts.helper_moved_args(node) if type(a) is cst.Name}
    if _moved_in(kinds, loop, batch.value) or _moved_in(kinds, loop, name.value) or name.value in helper_moved:
        return False
    found = cache[key] = any(other in helper_moved or _moved_in(kinds, loop, other) for other in siblings)
    return found


def _batch_loop_of(kinds: "KindInference", batch: cst.Name) -> Optional[cst.For]:
    """The `for` whose whole batch `batch` is: `for batch in X:` or the element of `for i, batch in
    enumerate(X):`, bound by nothing else (what X is: the caller's question)."""
    binding = _loop_binding(kinds.index.visible_bindings(batch))
    if binding is None:
        return None
    loop: cst.For = binding.source
    if not kinds.index.is_ancestor_or_self(loop.body, batch):
        return None
    if binding.index is None:
        return loop if type(loop.target) is cst.Name else None
    if binding.index != 1 or type(loop.target) not in (cst.Tuple, cst.List) or \
            len(loop.target.elements) != 2 or _enumerated(loop.iter) is loop.iter:
        return None
    return loop


def _unknown_batches(kinds: "KindInference", iterable: cst.BaseExpression) -> bool:
    """The loop draws batches from something of no kind this module knows, through the same-element wrappers
    (`enumerate`, `tqdm`, `iter`): a parameter (`def inference(args, model, test_ld, device):`, whose callers
    pass what another module's factory returns), or an entry or attribute of what a call returns (`loaders =
    utils.get_data_loaders(**config)`, `for i, (x, y) in enumerate(tqdm(loaders[0])):`). Never a literal, a
    `range`, `zip` or a tensor. Asked only with the other evidence of host batches: the loop moves a sibling part
    of each batch to the accelerator itself (`x = x.to(device)`), so the batches are drawn in host memory."""
    from gpulint.analysis.kinds import Kind

    iterable = kinds.wrapper_bound_to(iterable)
    for _ in range(4):
        if type(iterable) is not cst.Call or (dotted_name(iterable.func) not in _SAME_ELEMENTS and
                                              not is_progress_wrapper(dotted_name(iterable.func))):
            break
        args = [a.value for a in iterable.args if a.keyword is None and not a.star]
        if not args:
            return False
        iterable = kinds.wrapper_bound_to(args[0])
    if type(iterable) not in (cst.Name, cst.Subscript, cst.Attribute) or kinds.of(iterable) is not Kind.UNKNOWN:
        return False
    base = iterable
    while type(base) in (cst.Subscript, cst.Attribute):
        base = base.value  # type: ignore[attr-defined]
    if type(base) is not cst.Name:
        return False
    bindings = kinds.index.visible_bindings(base)
    if len(bindings) != 1:
        return False
    b = bindings[0]
    if b.kind == "param":
        return True
    return b.kind == "assign" and b.index is None and type(b.value) is cst.Call and \
        dotted_name(b.value.func) not in _NOT_BATCHES and kinds.of(b.value) is not Kind.TENSOR


# Calls whose result is no source of loader batches.
_NOT_BATCHES = frozenset({"zip", "range", "list", "tuple", "map", "filter", "sorted", "reversed", "dict", "set",
                          "len", "torch.split", "torch.chunk", "torch.unbind"})


def _enumerated(iterable: cst.BaseExpression) -> cst.BaseExpression:
    """X of `enumerate(X)` (its one argument), else `iterable` itself."""
    if type(iterable) is cst.Call and dotted_name(iterable.func) == "enumerate" and len(iterable.args) == 1 and \
            iterable.args[0].keyword is None and not iterable.args[0].star:
        return iterable.args[0].value
    return iterable


def _walk(node: cst.CSTNode):
    from gpulint.analysis.tree import descendants
    return descendants(node)


def _loop_binding(bindings: list):
    """The one binding of a name when it is the target of a `for` statement (`for batch in loader:`), else None:
    the walk from a name back to the loop whose batches it holds, shared by the questions below and by
    `loader_batch`."""
    if len(bindings) != 1 or bindings[0].kind != "for" or type(bindings[0].source) is not cst.For:
        return None
    return bindings[0]


def loader_batch(kinds: "KindInference", expr: cst.BaseExpression) -> bool:
    """`src = example` of `for example in loader:`, through plain renamings only (each name bound once, never
    copied to a device on the way): the batch as the loader handed it out, in host memory, not a tensor the caller
    computed on the device (analysis/forward.py `_hands_over_device_tensors`)."""
    from gpulint.analysis.kinds import Kind

    for _ in range(8):
        if type(expr) is not cst.Name:
            return False
        bindings = kinds.index.visible_bindings(expr)
        loop = _loop_binding(bindings)
        if loop is not None:
            return kinds.of(loop.source.iter) is Kind.LOADER or _iterates_a_loader(kinds, loop.source.iter)
        if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None:
            return False
        expr = bindings[0].value
    return False


def iterates_a_loader(kinds: "KindInference", iterable: cst.BaseExpression) -> bool:
    """The loop over `iterable` draws a loader's batches (`loader`, `enumerate(loader)`, `tqdm(loader)`)."""
    return _iterates_a_loader(kinds, iterable)
