"""One Definition Rule: no two files define the same class at namespace scope.

Two `struct rdmahd::ModuleFacts` (kernel modules in facts/plumbing_facts.h, the transceiver's
EEPROM in facts/module_facts.h) once compiled and linked without a word: the linker kept one
`std::vector<ModuleFacts>` for both, and the sanitizer build read a bool out of the other type's
bytes. GCC only sees this under -flto -Wodr, so this test reads the sources: every struct or class
defined with a body at namespace scope outside an anonymous namespace, keyed by its qualified name,
must come from one file. Classes in anonymous namespaces (a .cc file's helpers) are exempt.
"""
import collections
import os
import re
import tempfile
import unittest

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SKIP_DIRS = {".git", "node_modules"}

_TOKEN = re.compile(
    r'//[^\n]*|/\*.*?\*/|R"\((?:.|\n)*?\)"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
    r"|\{|\}|;|<|>|\b(?:namespace|struct|class|template)\b\s*[A-Za-z_0-9:]*",
    re.S)


def definitions(text):
    """Yields the qualified names of classes defined with a body at named-namespace scope."""
    stack = []        # ("namespace", name) or ("other", "") per open brace
    pending = None    # the namespace/struct/class a following "{" opens
    angle = 0         # depth inside template <...>: `class T` there declares a parameter
    for m in _TOKEN.finditer(text):
        t = m.group(0)
        if t[0] in "/\"'" or t.startswith('R"'):
            continue
        if t == "<":
            if angle or (pending and pending[0] == "template"):
                angle += 1
            continue
        if t == ">":
            if angle:
                angle -= 1
                if angle == 0:
                    pending = None
            continue
        if angle:
            continue
        if t == "{":
            if pending and pending[0] in ("struct", "class") and pending[1] and "::" not in pending[1]:
                if all(kind == "namespace" and name for kind, name in stack):
                    yield "::".join([name for _, name in stack] + [pending[1]])
            stack.append(("namespace", pending[1]) if pending and pending[0] == "namespace" else ("other", ""))
            pending = None
        elif t == "}":
            if stack:
                stack.pop()
            pending = None
        elif t == ";":
            pending = None
        else:
            parts = t.split()
            pending = (parts[0], parts[1] if len(parts) > 1 else "")


def duplicates(root):
    where = collections.defaultdict(set)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith("build")]
        for f in filenames:
            if not f.endswith((".h", ".cc")):
                continue
            path = os.path.join(dirpath, f)
            with open(path, encoding="utf-8", errors="replace") as fh:
                for name in definitions(fh.read()):
                    where[name].add(os.path.relpath(path, root))
    return {name: sorted(files) for name, files in where.items() if len(files) > 1}


class OneDefinitionTest(unittest.TestCase):
    def test_no_class_is_defined_in_two_files(self):
        found = duplicates(SOURCE_DIR)
        self.assertEqual(found, {}, "the same class defined in more than one file (rename one): "
                         + "; ".join(f"{k} in {', '.join(v)}" for k, v in sorted(found.items())))

    def test_the_check_finds_a_planted_twin_and_spares_anonymous_namespaces(self):
        with tempfile.TemporaryDirectory() as d:
            def write(name, text):
                with open(os.path.join(d, name), "w", encoding="utf-8") as f:
                    f.write(text)
            write("a.h", "namespace rdmahd {\nstruct ModuleFacts {\n  bool loaded = false;\n};\n}\n")
            write("b.h", "namespace rdmahd {\n// struct Decoy {\nstruct ModuleFacts { int netdevs; };\n"
                         "struct Fwd;\ntemplate <class T> struct Box { T t; };\n}\n")
            write("c.cc", "namespace rdmahd {\nnamespace {\nstruct Helper { int x; };\n}\n"
                          "struct Outer { struct Inner { int y; }; };\n}\n")
            write("d.cc", "namespace rdmahd {\nnamespace {\nstruct Helper { long x; };\n}\n"
                          "void f() { struct Inner { int z; }; }\n}\n")
            self.assertEqual(duplicates(d), {"rdmahd::ModuleFacts": ["a.h", "b.h"]})


if __name__ == "__main__":
    unittest.main()
