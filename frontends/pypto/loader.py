"""Importing a kernel file as Python does, with the stand-in `pypto`, and finding its kernels.

Reading a `.py` kernel **imports it**: its module-level code runs (decorators, factories,
config objects, `import torch`, sibling helper modules), exactly as when PyPTO's JIT reads
it. Only for the duration of that import, and only inside tileir's loading:

- `sys.modules["pypto"]` (and `pypto.frontend`, ...) is `frontends.pypto.standin`'s
  stand-in, so the real `pypto` is never needed (any real `pypto.*` entries are hidden and
  put back after);
- the file's folder is first on `sys.path`, so `import helpers` finds a sibling module;
- `torch_npu`, when it is not installed, is an empty module, and torch.library
  registrations for the NPU dispatch key register nothing (`frontends.pypto.torch_host`:
  they are the host wrapper's, which tileir does not run).

Afterwards `sys.modules` and `sys.path` are as before, except that modules the file
imported from outside its folder (numpy, torch) stay imported. The module gets a unique
name (`_tileir_kernel_<n>_<stem>`), so loading a file twice gives two independent modules.

A failing import is one located error at the line of the kernel file (or of the helper
module) that raised, and a missing module names what to install.
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
import sys
import threading
import traceback
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frontends.pypto import standin
from frontends.pypto.limits import MAX_EXPRESSION_DEPTH, too_deep
from frontends.pypto.standin import JitKernel
from frontends.pypto.torch_host import host_side
from tileir.diagnostics import TileirError

__all__ = [
    "KernelEntry",
    "LoadedFile",
    "Sources",
    "Unreached",
    "is_user_file",
    "load_module",
    "looks_like_jit",
]

_counter = itertools.count()

_NOT_USER = tuple(
    str(Path(p).resolve())
    for p in {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        str(Path(__file__).parents[2] / "tileir"),
    }
) + (str(Path(__file__).resolve().parent),)
"""Code under these folders is library code: called, never inlined or unloaded."""


def is_user_file(filename: str) -> bool:
    """Whether a function from `filename` is the user's (inlined by the translator)."""
    if not filename or filename.startswith("<") and filename not in SOURCES.files:
        return False
    if filename in SOURCES.files:
        return True
    resolved = str(Path(filename).resolve())
    return not any(resolved.startswith(p) for p in _NOT_USER)


class Sources:
    """The parsed source of every file whose functions the translator reads: the AST of
    a live function is found by its code object's file and first line."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[list[str], ast.Module]] = {}

    def add(self, filename: str, text: str) -> ast.Module:
        try:
            tree = ast.parse(text, filename=filename)
        except SyntaxError as e:
            raise TileirError(
                f"{filename}:{e.lineno or 0}:{e.offset or 0}: error: invalid Python: {e.msg}"
            ) from None
        except (RecursionError, MemoryError):
            raise TileirError(
                f"{filename}: error: the file nests too deeply for Python's parser "
                f"(tileir's limit is {MAX_EXPRESSION_DEPTH} levels in an expression)"
            ) from None
        if (deep := too_deep(tree)) is not None:
            node, message = deep
            line, col = getattr(node, "lineno", 0), getattr(node, "col_offset", -1) + 1
            raise TileirError(f"{filename}:{line}:{col}: error: {message}")
        self.files[filename] = (text.splitlines(), tree)
        return tree

    def forget_files(self) -> None:
        """Drop what was read from disk (text given directly cannot be read again)."""
        for name in [n for n in self.files if Path(n).is_file()]:
            del self.files[name]

    def lines(self, filename: str) -> list[str]:
        entry = self.files.get(filename)
        return entry[0] if entry is not None else []

    def tree(self, filename: str) -> ast.Module | None:
        if filename not in self.files:
            try:
                text = Path(filename).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
            try:
                self.add(filename, text)
            except TileirError:
                return None
        return self.files[filename][1]

    def node_of(self, code: types.CodeType) -> ast.FunctionDef | ast.Lambda | None:
        """The `def` (or `lambda`) whose code object is `code`."""
        tree = self.tree(code.co_filename)
        if tree is None:
            return None
        line = code.co_firstlineno
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                if node.name == code.co_name and line in (first, node.lineno):
                    return node  # type: ignore[return-value]
            elif isinstance(node, ast.Lambda) and code.co_name == "<lambda>":
                if node.lineno == line:
                    return node
        return None


SOURCES = Sources()
"""One table for the process: a file's text is read once per load (`load_module` re-adds
the kernel file, so an edited file is read again)."""


@dataclass
class KernelEntry:
    """A kernel of the loaded file: its symbol name in the IR and the names that select it
    (the function's own name and every module-level name bound to it)."""

    kernel: JitKernel
    name: str
    aliases: tuple[str, ...]


@dataclass(frozen=True)
class Unreached:
    """A `@pypto.frontend.jit` def inside a function that the import never called."""

    name: str
    line: int
    """The line of the kernel's first decorator."""
    factory: tuple[str, ...]
    """The names from the module down to the enclosing function (`("make_kernel",)`)."""
    factory_line: int

    @property
    def qualname(self) -> str:
        return ".<locals>.".join([*self.factory, self.name])

    def selected_by(self, name: str) -> bool:
        return name in (self.name, self.qualname, self.factory[-1], ".".join(self.factory))


def unreached_kernels(tree: ast.Module, made: list[JitKernel]) -> list[Unreached]:
    """Every jit def nested in a function whose kernel the import did not make."""
    lines = {k.fn.__code__.co_firstlineno for k in made}
    out: list[Unreached] = []

    def visit(body: list[ast.stmt], path: tuple[str, ...], in_function: bool) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, (*path, node.name), in_function)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                jit = [d for d in node.decorator_list if looks_like_jit(d)]
                first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                if jit and in_function and first not in lines and node.lineno not in lines:
                    out.append(Unreached(node.name, first, path, _def_line(tree, path)))
                visit(node.body, (*path, node.name), True)
            else:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.stmt):
                        visit([child], path, in_function)

    visit(tree.body, (), False)
    return out


def _def_line(tree: ast.Module, path: tuple[str, ...]) -> int:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == path[-1]:
            return node.lineno
    return 0


@dataclass
class LoadedFile:
    module: types.ModuleType
    filename: str
    kernels: list[KernelEntry]
    unreached: list[Unreached] = field(default_factory=list)
    """The `@pypto.frontend.jit` defs inside functions the module's own code never called
    (a factory the wrapper calls at run time; `frontends.pypto.factories` calls it)."""
    own: dict[str, types.ModuleType] = field(default_factory=dict)
    """The module's own `sys.modules` entries (its package and itself)."""

    def select(self, name: str | None) -> list[KernelEntry]:
        """Every module-level kernel, or the one `name` selects; a located error otherwise."""
        if not self.kernels:
            raise TileirError(f"{self.filename}: error: no @pypto.frontend.jit kernel in this file")
        if name is None:
            return self.kernels
        found = [k for k in self.kernels if name == k.name or name in k.aliases]
        exact = [k for k in found if k.name == name]
        if len(exact) == 1 or len(found) == 1:
            return exact or found
        names = ", ".join([*(k.name for k in self.kernels), *(u.qualname for u in self.unreached)])
        if not found:
            raise TileirError(
                f"{self.filename}: error: no @pypto.frontend.jit kernel named {name!r} "
                f"(kernels: {names})"
            )
        raise TileirError(
            f"{self.filename}: error: {name!r} names {len(found)} kernels; select one of "
            f"{', '.join(k.name for k in found)}"
        )

    @contextmanager
    def reentered(self) -> Iterator[None]:
        """The import's context again (stand-in `pypto`, the file's folders on
        `sys.path`), to run the module's code later: a factory the wrapper would call."""
        folder = Path(self.filename).resolve().parent if Path(self.filename).exists() else None
        with _patched(self.own, folder):
            yield

    def call_error(self, e: BaseException, what: str) -> TileirError:
        """A located error for an exception the module's code raised after the import."""
        return _import_error(e, self.filename, what)

    def module_value(self, value: Any) -> Any:
        """A call's text value read in the module's namespace, as the wrapper would write
        it: a dotted name (`torch.bfloat16`, `pypto.DT_BF16`, `DEFAULTS`) or a class of
        the module called with literal arguments (`LstmConfig(alpha=0.1)`), nested in
        lists, tuples and dicts. Any other value, or text naming nothing, is unchanged."""
        if not isinstance(value, str):
            return value
        try:
            tree = ast.parse(value, mode="eval")
        except SyntaxError:
            return value
        try:
            with self.reentered():  # a dotted name may import a module beside the file
                return _evaluate(tree.body, vars(self.module))
        except _NotAValue:
            return value
        except KeyboardInterrupt:
            raise
        except Exception as e:  # the class's own __init__ rejecting the arguments
            raise TileirError(f"{self.filename}: error: the argument {value!r}: {e}") from None


class _NotAValue(Exception):
    pass


def _evaluate(node: ast.expr, names: dict[str, Any]) -> Any:
    """`module_value`'s expressions: no call but of a class, no private attribute."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        v = _evaluate(node.operand, names)
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise _NotAValue
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.List | ast.Tuple):
        items = [_evaluate(e, names) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return {_evaluate(k, names): _evaluate(v, names) for k, v in zip(node.keys, node.values)}  # type: ignore[arg-type]
    if isinstance(node, ast.Name) and not node.id.startswith("__"):
        if node.id in names:
            return names[node.id]
        return _import(node.id)  # `configs.Tiles(...)`: a module the file's test imports
    if isinstance(node, ast.Attribute) and not node.attr.startswith("_"):
        base = _evaluate(node.value, names)
        try:
            return getattr(base, node.attr)
        except AttributeError:
            if isinstance(base, types.ModuleType):  # a submodule not imported yet
                return _import(f"{base.__name__}.{node.attr}")
            raise _NotAValue from None
    if isinstance(node, ast.Call):
        fn = _evaluate(node.func, names)
        if not isinstance(fn, type) or any(isinstance(a, ast.Starred) for a in node.args):
            raise _NotAValue
        if any(k.arg is None for k in node.keywords):
            raise _NotAValue
        args = [_evaluate(a, names) for a in node.args]
        return fn(*args, **{k.arg: _evaluate(k.value, names) for k in node.keywords})  # type: ignore[misc]
    raise _NotAValue


def _import(name: str) -> types.ModuleType:
    """The module `name` (on the kernel file's path), for a dotted name in a call's text."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise _NotAValue from None


LOADING = threading.RLock()
"""Held while a kernel file is loaded and translated: loading patches `sys.modules` and
fills the shared `SOURCES` table, so two threads must not load at once."""


def load_module(text: str, filename: str) -> LoadedFile:
    """Import `text` as the module of `filename` (see the module docstring)."""
    SOURCES.forget_files()  # helper files are read again: they may have changed
    tree = SOURCES.add(filename, text)
    stem = "".join(c if c.isalnum() else "_" for c in Path(filename).stem)
    folder = Path(filename).resolve().parent if Path(filename).exists() else None
    # The module sits in a package of its own whose path is the file's folder, so that
    # `from .sibling import f` finds the sibling as Python would inside the real package.
    package = types.ModuleType(f"_tileir_kernel_{next(_counter)}")
    package.__path__ = [str(folder)] if folder is not None else []
    name = f"{package.__name__}.{stem}"
    spec = importlib.util.spec_from_loader(name, loader=None, origin=filename)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__file__ = filename
    module.__package__ = package.__name__
    try:
        code = compile(tree, filename, "exec", dont_inherit=True)
    except SyntaxError as e:  # what only the compiler checks (`continue` outside a loop)
        raise TileirError(
            f"{filename}:{e.lineno or 0}:{e.offset or 0}: error: invalid Python: {e.msg}"
        ) from None
    with _patched({package.__name__: package, name: module}, folder), standin.collecting() as made:
        try:
            exec(code, module.__dict__)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # the user's code may raise anything, SystemExit too
            raise _import_error(e, filename) from None
    own = {package.__name__: package, name: module}
    entries = _entries(module, filename, made)
    return LoadedFile(module, filename, entries, unreached_kernels(tree, made), own)


@contextmanager
def _patched(own: dict[str, types.ModuleType], folder: Path | None) -> Iterator[None]:
    saved_path = list(sys.path)
    hidden = {k: v for k, v in sys.modules.items() if k == "pypto" or k.startswith("pypto.")}
    before = set(sys.modules)
    for k in hidden:
        del sys.modules[k]
    sys.modules.update(standin.modules())
    sys.modules.update(own)
    if folder is not None:
        sys.path.insert(0, str(folder))
        root = _package_root(folder)
        if root != folder:
            sys.path.insert(1, str(root))
    stubbed: list[str] = []
    try:
        with host_side() as stubbed:
            yield
    finally:
        sys.path[:] = saved_path
        for k in list(sys.modules):
            if k not in before and (k in own or k in stubbed or _unload(sys.modules[k])):
                del sys.modules[k]
        for k in [k for k in sys.modules if k == "pypto" or k.startswith("pypto.")]:
            del sys.modules[k]
        sys.modules.update(hidden)


def _package_root(folder: Path) -> Path:
    """The first folder upwards without an `__init__.py`: where the file's top-level
    package lives (`deepseek_v4/x.py` importing `deepseek_v4.common` or a sibling package),
    the folder pytest's default `prepend` import mode puts on `sys.path` for a test file."""
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder


def _unload(mod: Any) -> bool:
    """A module imported during the load that must not outlive it: any of the user's
    (a sibling helper module binds the stand-in `pypto`; a later real import must not see
    it). Library modules (numpy, torch) stay imported."""
    file = getattr(mod, "__file__", None)
    return isinstance(file, str) and is_user_file(file)


def _user_package(name: str) -> Path | None:
    """The folder of `name`'s parent package when it is the user's (on `sys.path` while
    the file loads): a module missing from the user's own package is not to install."""
    parent = name.rpartition(".")[0]
    if not parent:
        return None
    for entry in sys.path:
        folder = Path(entry or ".", *parent.split("."))
        if (folder / "__init__.py").is_file() and is_user_file(str(folder / "__init__.py")):
            return folder
    return None


def _import_error(
    e: BaseException, filename: str, raised: str = "importing the kernel file raised"
) -> TileirError:
    frames = traceback.extract_tb(e.__traceback__)
    user = [f for f in frames if is_user_file(f.filename)]
    where = user[-1] if user else None
    if isinstance(e, ModuleNotFoundError) and e.name and (found := _user_package(e.name)):
        what = (
            f"the kernel file imports `{e.name}`, which is not in the package "
            f"`{e.name.rpartition('.')[0]}` ({found}): no such module there"
        )
    elif isinstance(e, ModuleNotFoundError) and e.name:
        top = e.name.split(".")[0]
        what = (
            f"the kernel file imports `{e.name}`, which is not installed (reading a kernel "
            f"file imports it: install {top} to read this kernel)"
        )
    elif isinstance(e, ImportError):
        what = f"importing the kernel file failed: {e}"
    elif isinstance(e, TileirError):
        return e
    else:
        what = f"{raised} {type(e).__name__}: {e}"
    if where is None:
        return TileirError(f"{filename}: error: {what}")
    col = (where.colno or 0) + 1
    text = f"{where.filename}:{where.lineno}:{col}: error: {what}"
    if where.line:
        text += f"\n{where.lineno:5} | {where.line}"
    return TileirError(text)


def _entries(module: types.ModuleType, filename: str, made: list[JitKernel]) -> list[KernelEntry]:
    bound: dict[int, list[str]] = {}
    for key, value in vars(module).items():
        if isinstance(value, JitKernel):
            bound.setdefault(id(value), []).append(key)
    kernels: list[JitKernel] = []
    for k in made:
        mine = k.fn.__code__.co_filename == filename or id(k) in bound
        if mine and all(k is not other for other in kernels):
            kernels.append(k)
    used: set[str] = set()
    out: list[KernelEntry] = []
    for k in kernels:
        names = bound.get(id(k), [])
        own = k.fn.__name__
        base = own if own in names or not names else names[0]
        sym = base
        n = 1
        while sym in used:
            sym = f"{base}_{n}"
            n += 1
        used.add(sym)
        out.append(KernelEntry(k, sym, tuple(dict.fromkeys([*names, own]))))
    return out


def looks_like_jit(dec: ast.expr) -> bool:
    target = dec.func if isinstance(dec, ast.Call) else dec
    return (isinstance(target, ast.Attribute) and target.attr == "jit") or (
        isinstance(target, ast.Name) and target.id == "jit"
    )
