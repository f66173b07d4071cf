#!/usr/bin/python3
"""Checks the size bound of docs/architecture.md: no class or struct defined
in a header under src/ has more than 25 fields or 40 methods, except those
listed under "Classes past the size bound" there, each with a reason.

Fields are non-static data members; methods, the member functions declared
in the class (static ones and operators too; constructors, destructors and
the implicit ones not). A record, whose every field is public (options,
specs, wire messages: the mirror of a file or a protocol), is held to the
method bound only: its fields are the format's. Counted by clang itself (libclang, Debian's
python3-clang-14) over one translation unit that includes every header of
src/, so the count is the compiler's, not a pattern's.

Fails, naming each, on a class over the bound that the list does not name,
and on a listed class now within it (the list must stay true).

Usage: scripts/check_class_size.py [--print]   (--print: every class's counts)
(Debian's own python3: the clang module is a Debian package.)
"""
import pathlib
import re
import sys
import tempfile

import clang.cindex as ci

MAX_FIELDS = 25
MAX_METHODS = 40

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "src"


def listed_exceptions():
    """The classes docs/architecture.md lists as past the bound."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Classes past the size bound", 1)
    if len(section) < 2:
        sys.exit("class size: docs/architecture.md has no \"Classes past the size bound\" section")
    body = section[1].split("\n## ", 1)[0]
    return set(re.findall(r"^- `([A-Za-z_:]+)`", body, re.M))


def qualified(cursor):
    parts = []
    c = cursor
    while c is not None and c.kind != ci.CursorKind.TRANSLATION_UNIT:
        if c.spelling:
            parts.append(c.spelling)
        c = c.semantic_parent
    name = "::".join(reversed(parts))
    return name[len("muster::"):] if name.startswith("muster::") else name


def main():
    ci.Config.set_library_file("/usr/lib/llvm-14/lib/libclang-14.so.1")
    headers = sorted(p for p in SRC.rglob("*.h"))
    with tempfile.NamedTemporaryFile("w", suffix=".cc") as tu:
        for h in headers:
            tu.write(f'#include "{h.relative_to(SRC)}"\n')
        tu.flush()
        args = ["-std=c++20", "-xc++", f"-I{SRC}", "-I/usr/include/postgresql", "-DFMT_SHARED",
                "-DSPDLOG_COMPILED_LIB", "-DSPDLOG_FMT_EXTERNAL", "-DSPDLOG_SHARED_LIB"]
        unit = ci.Index.create().parse(tu.name, args=args,
                                       options=ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES)
    errors = [d for d in unit.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errors:
        for d in errors[:20]:
            print(f"class size: cannot parse the headers: {d}", file=sys.stderr)
        return 2

    sizes = {}  # qualified name -> (fields, methods, where)

    def visit(cursor):
        for c in cursor.get_children():
            loc = c.location.file
            if loc is None or not str(loc.name).startswith(str(SRC)):
                # Namespaces span files: look inside those, skip the rest.
                if c.kind == ci.CursorKind.NAMESPACE:
                    visit(c)
                continue
            if c.kind in (ci.CursorKind.CLASS_DECL, ci.CursorKind.STRUCT_DECL) and c.is_definition():
                field_decls = [m for m in c.get_children() if m.kind == ci.CursorKind.FIELD_DECL]
                fields = len(field_decls)
                record = all(m.access_specifier == ci.AccessSpecifier.PUBLIC for m in field_decls)
                methods = sum(1 for m in c.get_children()
                              if m.kind in (ci.CursorKind.CXX_METHOD, ci.CursorKind.FUNCTION_TEMPLATE))
                where = f"{pathlib.Path(loc.name).relative_to(ROOT)}:{c.location.line}"
                sizes[qualified(c)] = (0 if record else fields, methods, where)
                visit(c)
            elif c.kind == ci.CursorKind.NAMESPACE:
                visit(c)

    visit(unit.cursor)
    if "--print" in sys.argv:
        for name, (f, m, where) in sorted(sizes.items(), key=lambda kv: -max(kv[1][0], kv[1][1] * 25 / 40)):
            print(f"{f:4d} fields {m:4d} methods  {name}  ({where})")  # 0 fields: a record
    listed = listed_exceptions()
    fail = False
    for name, (f, m, where) in sorted(sizes.items()):
        over = f > MAX_FIELDS or m > MAX_METHODS
        if over and name not in listed:
            print(f"class size: {name} ({where}) has {f} fields and {m} methods, past {MAX_FIELDS} and "
                  f"{MAX_METHODS}: split it, or list it with a reason in docs/architecture.md")
            fail = True
    for name in sorted(listed):
        if name not in sizes:
            print(f"class size: docs/architecture.md lists {name}, which no header of src/ defines")
            fail = True
        elif not (sizes[name][0] > MAX_FIELDS or sizes[name][1] > MAX_METHODS):
            f, m, _ = sizes[name]
            print(f"class size: {name} is within the bound now ({f} fields, {m} methods): "
                  "take it off the list in docs/architecture.md")
            fail = True
    if not fail:
        print(f"class size: {len(sizes)} classes of src/ checked; past the bound, as listed: "
              + (", ".join(sorted(listed)) or "none"))
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
