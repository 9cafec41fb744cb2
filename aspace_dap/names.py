"""Function names as people read them: demangled, namespace-qualified, and a short form for narrow views.

Demangling is LLVM's Itanium demangler (the `pydemumble` binding, what `llvm-cxxfilt` prints); nothing
here decodes a mangled name by hand. What this module does itself is cut the demangler's text:

- `function_name`: the qualified name without return type and parameter list, as gdb names a
  function it has DWARF for (`app::scatter_kernel<float, 4>`, not
  `void app::scatter_kernel<float, 4>(float*, float const*, long)`);
- `short_name`: over SHORT_NAME_LIMIT characters, every template argument list at the top of the
  name elided (`cutlass::gemm::kernel::GemmUniversal<…>::operator()`): the Call Stack's form. The
  full name stays one step away (`bt`, `info frame`, the exception text).

Where the demangler is not installed (a platform without its wheel) names stay mangled and
`missing_demangler()` says why, for the launch's warnings.
"""

from __future__ import annotations

from functools import lru_cache

try:  # LLVM's demangler; wheels for Linux x86-64/aarch64, macOS and Windows
    import pydemumble as _demangler
except ImportError:  # pragma: no cover - depends on the platform
    _demangler = None

SHORT_NAME_LIMIT = 80  # longer names lose their template arguments in the Call Stack
ELIDED = "…"
# what may follow a member function's parameter list in a demangled name
_TRAILING_QUALIFIERS = ("const", "volatile", "&", "&&", "noexcept", "restrict")
# operator names whose characters are not brackets
_OPERATOR_SYMBOLS = ("()", "[]", "<=>", "<<=", ">>=", "<<", ">>", "<=", ">=", "->*", "->", "<", ">")


def missing_demangler() -> str | None:
    """Why C++ names are shown mangled, or None when they are demangled."""
    if _demangler is None:
        return ("C++ names are shown mangled: the demangler (the pydemumble package, LLVM's) is not "
                "installed for this platform; `pip install pydemumble` adds it")
    return None


def is_mangled(name: str | None) -> bool:
    """An Itanium C++ mangled name (what clang, nvcc and IGC give C++ functions)."""
    return bool(name) and name.startswith("_Z")


@lru_cache(maxsize=4096)
def demangle(name: str) -> str | None:
    """The demangler's full text (`void ns::f<int>(int*)`), None when `name` is not a mangled C++ name,
    the demangler refuses it, or there is no demangler."""
    if _demangler is None or not is_mangled(name):
        return None
    try:
        text = _demangler.demangle(name)
    except Exception:  # a binding's failure is a name left as it is, never a crash
        return None
    return text or None


def readable(name: str) -> str:
    """The full demangled name of a mangled one; any other name as it is."""
    return demangle(name) or name


@lru_cache(maxsize=4096)
def function_name(name: str) -> str:
    """A function's qualified name without return type and parameters, from its mangled name (any other
    name is returned as it is): what gdb shows for a function with DWARF."""
    full = demangle(name)
    if full is None:
        return name
    cut = _signature_name(full)
    return cut if cut else full


def short_name(name: str, limit: int = SHORT_NAME_LIMIT) -> str:
    """`name` with its top-level template argument lists elided when it is longer than `limit`."""
    if len(name) <= limit:
        return name
    depths = _depths(name)
    if depths is None:
        return name
    out, i = [], 0
    while i < len(name):
        c = name[i]
        if c == "<" and depths[i][0] == 0 and depths[i][1] == 0:
            close = _matching(name, depths, i)
            if close is None:
                return name
            out.append("<" + ELIDED + ">")
            i = close + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def display_name(name: str) -> str:
    """The Call Stack's form of a function name (mangled or not): readable, short when long."""
    return short_name(function_name(name))


# -- cutting the demangler's text ----------------------------------------------------------------


def _operator_spans(text: str) -> list[tuple[int, int]]:
    """Where an operator's own symbol lies (`operator<`, `operator()`): not brackets."""
    spans = []
    start = text.find("operator")
    while start >= 0:
        before = text[start - 1] if start else " "
        after = start + len("operator")
        if before in " :(<,~" or start == 0:
            for symbol in _OPERATOR_SYMBOLS:
                if text.startswith(symbol, after):
                    spans.append((after, after + len(symbol)))
                    break
        start = text.find("operator", after)
    return spans


def _depths(text: str) -> list[tuple[int, int]] | None:
    """For each character, (parentheses/brackets/braces/quotes depth, angle-bracket depth) before it;
    None when the brackets do not balance (a text this module does not understand)."""
    skip = set()
    for a, b in _operator_spans(text):
        skip.update(range(a, b))
    out = []
    round_ = angle = 0
    quoted = False
    for i, c in enumerate(text):
        out.append((round_ + quoted, angle))
        if i in skip:
            continue
        if c == "'":  # LLVM's 'lambda'/'unnamed' markers
            quoted = not quoted
        elif quoted:
            continue
        elif c in "([{":
            round_ += 1
        elif c in ")]}":
            round_ -= 1
        elif c == "<" and round_ == 0:
            angle += 1
        elif c == ">" and round_ == 0:
            angle -= 1
        if round_ < 0 or angle < 0:
            return None
    if round_ or angle or quoted:
        return None
    return out


def _matching(text: str, depths, open_at: int) -> int | None:
    """The index of the bracket closing the one at `open_at`."""
    level = depths[open_at]
    opener = text[open_at]
    closer = {"(": ")", "<": ">", "[": "]", "{": "}"}[opener]
    for j in range(open_at + 1, len(text)):
        if text[j] == closer and depths[j] == (level[0] + (opener != "<"), level[1] + (opener == "<")):
            return j
    return None


def _signature_name(full: str) -> str | None:
    """The qualified name in a demangled function signature, None where the text is not one."""
    depths = _depths(full)
    if depths is None:
        return None
    # the parameter list: the last top-level (...) group, followed only by qualifiers
    params = None
    for i, c in enumerate(full):
        if c == "(" and depths[i] == (0, 0) and i > 0 and not full.startswith("(.", i):  # `(.kd)`: a suffix
            close = _matching(full, depths, i)
            if close is None:
                return None
            rest = full[close + 1:].split()
            if all(word in _TRAILING_QUALIFIERS or word.startswith(("[clone", "(.")) or word.endswith(("]", ")"))
                   for word in rest):
                params = i
    if params is None:
        return None
    # the return type ends at the last top-level space before the name (not one inside `operator new`
    # or a conversion operator's type)
    spaces = [i for i in range(params) if full[i] == " " and depths[i] == (0, 0)]
    operator = full.rfind("operator", 0, params)
    while spaces and operator >= 0 and spaces[-1] > operator and depths[operator] == (0, 0):
        spaces.pop()
    start = spaces[-1] + 1 if spaces else 0
    return full[start:params] or None
