"""Mutants switched at boot (ktopic.runner.mutswitch), without a kernel:
the transform on small C files, each switched file compiled with gcc and,
where it runs, run with ktopic_mutant=0 and =N against the head and the
mutant compiled as they are; then the transform over every real mutant of
qemu/mutants/ on the real topic heads, when a work repository has them."""

from __future__ import annotations

import difflib
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO  # noqa: E402
sys.path.insert(0, str(REPO / "tools"))

from ktopic.runner import mutswitch as S  # noqa: E402

GCC = shutil.which("gcc")
needs_gcc = pytest.mark.skipif(GCC is None, reason="missing gcc: apt-get install gcc")

HEAD = """\
#include <stdio.h>
#include <stdlib.h>

struct pair { int a; int b; };
static int table[] = { 1, 2, 3 };

#define TWICE(x) \\
	((x) * 2)

int f(int x)
{
	int y = x + 1;

	if (x > 2) {
		y *= 2;
		y += table[1];
	}
	return y;
}

int g(int n)
{
	int i, sum = 0;

	for (i = 0; i < n; i++)
		sum += i;
	return sum;
}

int h(int x)
{
	int r = 0;

	r += x;
	r *= 3;
	r -= 1;
	return r;
}

int k(int x)
{
	if (x == 1)
		return 10;
	else if (x == 2)
		return 20;
	if (x < 0)
		goto neg;
	return TWICE(x);
neg:
	return -1;
}

int b(int x);

void run(void)
{
	printf("%d %d %d %d %d %d %d %d %d\\n", f(1), f(5), g(4), h(2), k(1), k(2), k(3), k(-4),
	       b(1));
}

int m(int x)
{
	if (x > 0) {
again:
		x -= 3;
		if (x > 4)
			goto again;
	}
	return x;
}

#define BUMP(v)		\\
do {			\\
	(v) += 1;	\\
	(v) *= 2;	\\
} while (0)

int b(int x)
{
	BUMP(x);
	return x;
}
"""

MAIN = """\
#include <stdlib.h>
int ktopic_mutant;
void run(void);
int main(int argc, char **argv)
{
	ktopic_mutant = argc > 1 ? atoi(argv[1]) : 0;
	run();
	return 0;
}
"""


def edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def diff(path: str, old: str, new: str) -> str:
    """A git diff of path from old to new."""
    body = difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                f"a/{path}", f"b/{path}", n=3)
    return f"diff --git a/{path} b/{path}\n" + "".join(body)


# The mutants below, by number: each is (the mutated text, the shape it has).
ONE_LINE = 1        # an expression changed in one line
MOVED = 2           # a line moved above two others (a statement moved, kept)
DELETED = 3         # a statement deleted
ADDED = 4           # a statement added
IF_LINE = 5         # a changed "if (" line whose block spans past the hunk
UNBRACED = 6        # the body of an unbraced for changed
ELSE_IF = 7         # a changed "else if (" line
DECLARED = 8        # a declaration's initializer changed
LABEL = 9           # a label added and a goto to it from elsewhere
MACRO = 10          # a statement in the do-while body of a macro


def mutants() -> dict[int, str]:
    return {
        ONE_LINE: edit(HEAD, "y *= 2;", "y *= 3;"),
        MOVED: edit(HEAD, "\tr += x;\n\tr *= 3;\n\tr -= 1;\n", "\tr -= 1;\n\tr += x;\n\tr *= 3;\n"),
        DELETED: edit(HEAD, "\tr *= 3;\n", ""),
        ADDED: edit(HEAD, "\treturn sum;\n", "\tsum += 100;\n\treturn sum;\n"),
        IF_LINE: edit(HEAD, "if (x > 2) {", "if (x > 6) {"),
        UNBRACED: edit(HEAD, "\t\tsum += i;\n", "\t\tsum += 2 * i;\n"),
        ELSE_IF: edit(HEAD, "else if (x == 2)", "else if (x == 3)"),
        DECLARED: edit(HEAD, "int y = x + 1;", "int y = x + 5;"),
        MACRO: edit(HEAD, "(v) *= 2;", "(v) *= 3;"),
        LABEL: edit(edit(HEAD, "\treturn TWICE(x);\n", "twice:\n\treturn TWICE(x);\n"),
                    "\treturn -1;\n", "\tx = 2;\n\tgoto twice;\n"),
    }


def compile_c(tmp: Path, name: str, text: str) -> Path:
    """text (with -Wall -Werror) and the driver, as a program."""
    src = tmp / f"{name}.c"
    src.write_text(text)
    main = tmp / "main.c"
    main.write_text(MAIN)
    exe = tmp / name
    p = subprocess.run([GCC, "-Wall", "-Werror", "-O1", "-o", str(exe), str(src), str(main)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr + text
    return exe


def output(exe: Path, *args: str) -> str:
    return subprocess.run([str(exe), *args], capture_output=True, text=True,
                          check=True).stdout


class Outputs(dict):
    """What the head (0) and each mutant print, compiled as they are, once
    and only when a test asks (pytest-xdist gives each worker a part of
    this file's tests, and each worker its own module fixtures)."""

    def __init__(self, tmp: Path):
        super().__init__()
        self.tmp = tmp

    def __missing__(self, n: int) -> str:
        text = HEAD if n == 0 else mutants()[n]
        self[n] = output(compile_c(self.tmp, f"m{n}", text))
        return self[n]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    return Outputs(tmp_path_factory.mktemp("plain"))


def syntax_ok(tmp: Path, text: str, name: str = "sw.c") -> None:
    src = tmp / name
    src.write_text(text)
    p = subprocess.run([GCC, "-fsyntax-only", "-Wall", "-Werror", str(src)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr + text


@needs_gcc
@pytest.mark.parametrize("n", sorted(mutants()))
def test_each_shape_switches_and_runs_as_the_mutant(tmp_path, outputs, n):
    """One mutant alone: the switched file compiles warning-free, and
    behaves as the head with ktopic_mutant=0 and as the mutant with =n."""
    mutated = mutants()[n]
    p = S.plan([(n, diff("lib/t.c", HEAD, mutated))], {"lib/t.c": HEAD})
    assert p.switched == [n] and not p.fallback, p.fallback
    text = p.files["lib/t.c"].text
    assert S.resolve(text, 0) == HEAD and S.resolve(text, n) == mutated
    assert outputs[0] != outputs[n], "the mutant must change the output"
    exe = compile_c(tmp_path, "sw", text)       # warning-free: -Wall -Werror
    assert [output(exe, x) for x in ("0", str(n), "99")] == [outputs[0], outputs[n], outputs[0]]


def test_the_switch_shapes(tmp_path):
    """What the regions are: the changed lines alone when they are whole
    statements; grown to the whole if statement, the unbraced loop, the
    if ... else if chain, or the end of the block of a declaration."""
    def region(n):
        (r,) = S.regions(diff("lib/t.c", HEAD, mutants()[n]), {"lib/t.c": HEAD})
        return "".join(r.old)
    assert region(ONE_LINE) == "\t\ty *= 2;\n"
    assert region(DELETED) == "\tr *= 3;\n"
    assert region(ADDED) == ""
    assert region(IF_LINE).startswith("\tif (x > 2) {\n") and region(IF_LINE).endswith("\t}\n")
    assert region(UNBRACED) == "\tfor (i = 0; i < n; i++)\n\t\tsum += i;\n"
    assert region(ELSE_IF).startswith("\tif (x == 1)\n") and "return 20" in region(ELSE_IF)
    assert region(DECLARED).startswith("\tint y = x + 1;") and \
        region(DECLARED).endswith("\treturn y;\n")
    # The moved line: two changes, each a statement of its own (both
    # switched by the same number).
    assert [("".join(r.old), "".join(r.new)) for r in S.regions(
        diff("lib/t.c", HEAD, mutants()[MOVED]), {"lib/t.c": HEAD})] == \
        [("", "\tr -= 1;\n"), ("\tr -= 1;\n", "")]
    text = S.plan([(ONE_LINE, diff("lib/t.c", HEAD, mutants()[ONE_LINE]))],
                  {"lib/t.c": HEAD}).files["lib/t.c"].text
    assert "#include <stdlib.h>\nextern int ktopic_mutant;\n\nstruct pair" in text
    assert "\t\tif (__builtin_expect(ktopic_mutant == 1, 0)) {\n\t\ty *= 3;\n" \
           "\t\t} else { /* ktopic_mutant off */\n\t\ty *= 2;\n\t\t} /* ktopic_mutant */\n" in text


@needs_gcc
def test_mutants_of_one_file_compose(tmp_path, outputs):
    """Every shape at once in one file, overlapping ones included (MOVED,
    DELETED, UNBRACED with ADDED, ONE_LINE and DECLARED in IF_LINE's
    block): one compiled program that is the head with 0 and each
    mutant with its number."""
    ms = mutants()
    p = S.plan([(n, diff("lib/t.c", HEAD, t)) for n, t in sorted(ms.items())],
               {"lib/t.c": HEAD})
    assert p.switched == sorted(ms) and not p.fallback, p.fallback
    text = p.files["lib/t.c"].text
    exe = compile_c(tmp_path, "sw", text)       # warning-free: -Wall -Werror
    assert output(exe, "0") == outputs[0]
    for n, mutated in ms.items():
        assert S.resolve(text, n) == mutated, n
        assert output(exe, str(n)) == outputs[n], n
    # Where each mutant's lines landed (a compile error there names it).
    f = p.files["lib/t.c"]
    line = text.splitlines().index("\t\ty *= 3;") + 1
    assert f.mutant_at(line) == ONE_LINE and f.mutant_at(1) is None


def test_overlaps_that_are_not_whole_statements_fall_back(monkeypatch):
    """Two mutants share a run of lines only when it is whole statements;
    else the later one falls back, and the earlier stays switched."""
    ms = mutants()
    monkeypatch.setattr(S, "_union_ok", lambda lx, s, e: False)
    p = S.plan([(IF_LINE, diff("lib/t.c", HEAD, ms[IF_LINE])),
                (ONE_LINE, diff("lib/t.c", HEAD, ms[ONE_LINE])),
                (ADDED, diff("lib/t.c", HEAD, ms[ADDED]))], {"lib/t.c": HEAD})
    assert p.switched == [IF_LINE, ADDED]
    assert p.fallback == {ONE_LINE: "lib/t.c:14: overlaps mutant 5, and the lines both "
                                    "change are not whole statements"}


@pytest.mark.parametrize("old,new,path,why", [
    ("static int table[] = { 1, 2, 3 };", "static int table[] = { 1, 5, 3 };", "lib/t.c",
     "lib/t.c:5: at file scope"),
    ("struct pair { int a; int b; };", "struct pair { int b; int a; };", "lib/t.c",
     "lib/t.c:4: at file scope"),
    ("int h(int x)\n", "static int h(int x)\n", "lib/t.c", "lib/t.c:30: at file scope"),
    ("\t((x) * 2)", "\t((x) * 3)", "lib/t.c", "lib/t.c:8: a macro body (#define TWICE(x) \\)"),
    ("#include <stdlib.h>\n", "", "lib/t.c", "lib/t.c:2: a preprocessor line "
                                              "(#include <stdlib.h>)"),
    ("if (x > 0) {", "if (x > 1) {", "lib/t.c", "lib/t.c:63: a label both sides have (again)"),
    ("int a; int b; };", "int a; int b; int c; };", "lib/t.c", "lib/t.c:4: at file scope"),
    ("r += x;", "r += 2 * x;", "include/linux/t.h",
     "include/linux/t.h: a header the base has (its includers are most of the tree)"),
    ("r += x;", "r += 2 * x;", "lib/Kconfig", "lib/Kconfig: not C"),
])
def test_what_is_not_switchable_says_why(old, new, path, why):
    p = S.plan([(1, diff(path, HEAD, edit(HEAD, old, new)))], {path: HEAD})
    assert p.switched == [] and p.fallback == {1: why} and p.files == {}


@needs_gcc
def test_a_header_the_topic_adds_is_switched(tmp_path):
    """A header the topic itself adds has few includers: switched as a .c
    file is, its declaration after its #include lines."""
    hdr = "#ifndef T_H\n#define T_H\n#include <stdio.h>\n\nstatic inline int t(int x)\n" \
          "{\n\tx += 1;\n\treturn x;\n}\n#endif\n"
    mutated = edit(hdr, "x += 1;", "x += 2;")
    d = diff("include/linux/t.h", hdr, mutated)
    assert S.plan([(3, d)], {"include/linux/t.h": hdr}).fallback
    p = S.plan([(3, d)], {"include/linux/t.h": hdr}, topic_headers={"include/linux/t.h"})
    text = p.files["include/linux/t.h"].text
    assert p.switched == [3] and S.resolve(text, 3) == mutated
    assert text.startswith("#ifndef T_H\n#define T_H\n#include <stdio.h>\nextern int "
                           "ktopic_mutant;\n")
    (tmp_path / "t.h").write_text(text)
    syntax_ok(tmp_path, '#include "t.h"\nint main(void) { return t(1); }\n', "use.c")


def test_a_mutant_that_does_not_apply_or_adds_a_file_is_not_switched():
    stale = diff("lib/t.c", HEAD.replace("r *= 3;", "r *= 4;"), HEAD.replace("r *= 3;", "r *= 5;"))
    p = S.plan([(1, stale)], {"lib/t.c": HEAD})
    assert p.fallback[1].startswith("does not apply to lib/t.c")
    new_file = "diff --git a/lib/n.c b/lib/n.c\nnew file mode 100644\n--- /dev/null\n" \
               "+++ b/lib/n.c\n@@ -0,0 +1 @@\n+int n;\n"
    assert S.plan([(2, new_file)], {}).fallback == {2: "new file: lib/n.c"}


def test_the_switch_unit():
    """The one file that defines the parameter, built in by lib/Makefile."""
    unit = S.switch_unit()
    assert "int ktopic_mutant;\nEXPORT_SYMBOL(ktopic_mutant);\n" \
           "core_param(ktopic_mutant, ktopic_mutant, int, 0444);\n" in unit
    assert S.switch_makefile("obj-y += a.o\n") == "obj-y += a.o\nobj-y += ktopic_mutant.o\n"


# ------------------------------------------------------------- the real mutants

def _real_git_dir() -> Path:
    """The main job's work repository (read only), whatever HOME the
    hermetic unit tests set."""
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    return home / ".cache" / "ktopic" / "linux.git"


@pytest.mark.optional
def test_every_real_mutant_on_the_real_heads(capsys):
    """Every qemu/mutants/<topic>/ mutant planned on its topic's head in
    the main job's work repository: each switched file resolves to the
    head with 0 and to the head with the mutant applied with its number.
    Prints how many of each topic switch, and why the others do not."""
    git_dir = _real_git_dir()
    if not (git_dir / "HEAD").exists():
        pytest.skip(f"optional: no work repository at {git_dir} (make imports and "
                    "generates it)")
    from ktopic.runner import mutate as M
    lines = []
    for topic_dir in sorted((REPO / "qemu" / "mutants").iterdir()):
        topic = topic_dir.name
        head = subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", "-q", "--verify",
                               f"topic/{topic}"], capture_output=True, text=True).stdout.strip()
        if not head:
            continue
        ms = M.load_mutants(REPO / "qemu" / "mutants", topic)
        texts, headers = M.head_texts(git_dir, head, "base", ms)
        p = S.plan([(M.number(m), m.diff.decode()) for m in ms], texts, headers)
        for path, f in p.files.items():
            assert S.resolve(f.text, 0) == texts[path], path
        for m in ms:
            if M.number(m) not in p.switched:
                continue
            for fc in S.parse_diff(m.diff.decode()):
                _, _, new = S.ops_of(texts[fc.path], fc)
                assert S.resolve(p.files[fc.path].text, M.number(m)) == "".join(new), m.name
        lines.append(f"{topic}: {len(p.switched)}/{len(ms)} switchable")
        lines += [f"  {n:04d}: {why}" for n, why in p.fallback.items()]
    with capsys.disabled():
        print("\n" + "\n".join(lines))


def test_a_change_inside_an_initializer_in_a_function_is_not_switched():
    src = "int f(void)\n{\n\tint v[] = {\n\t\t1,\n\t\t2,\n\t};\n\n\treturn v[1];\n}\n"
    p = S.plan([(1, diff("lib/i.c", src, src.replace("\t\t2,", "\t\t3,")))], {"lib/i.c": src})
    assert p.fallback == {}, "the whole declaration is one statement: grown to it"
    assert S.resolve(p.files["lib/i.c"].text, 1) == src.replace("\t\t2,", "\t\t3,")
    src = "static const int t[] = {\n\t1,\n\t2,\n};\n"
    p = S.plan([(1, diff("lib/i.c", src, src.replace("\t2,", "\t3,")))], {"lib/i.c": src})
    assert p.fallback == {1: "lib/i.c:1: at file scope"}


def test_a_macro_body_switches_inside_its_do_while_block():
    """Each line the switch writes into a macro body continues it."""
    (r,) = S.regions(diff("lib/t.c", HEAD, mutants()[MACRO]), {"lib/t.c": HEAD})
    assert r.macro and "".join(r.old) == "\t(v) *= 2;\t\\\n"
    text = S.plan([(MACRO, diff("lib/t.c", HEAD, mutants()[MACRO]))],
                  {"lib/t.c": HEAD}).files["lib/t.c"].text
    assert "\tif (__builtin_expect(ktopic_mutant == 10, 0)) { \\\n\t(v) *= 3;\t\\\n" \
           "\t} else { /* ktopic_mutant off */ \\\n\t(v) *= 2;\t\\\n" \
           "\t} /* ktopic_mutant */ \\\n} while (0)\n" in text
    # A statement expression's last statement is its value: not switched.
    src = "#define TWO(a)\t\\\n({\t\\\n\tint __t = (a);\t\\\n\t__t * 2;\t\\\n})\n\n" \
          "int s(int x)\n{\n\treturn TWO(x);\n}\n"
    p = S.plan([(1, diff("lib/s.c", src, src.replace("__t * 2", "__t * 3")))], {"lib/s.c": src})
    assert p.fallback == {1: "lib/s.c:4: in a macro body, not in its do-while block"}
    # An expression macro has no statements at all.
    src = "#define SUM(a, b)\t\\\n\t((a) +\t\\\n\t (b))\n\nint s(int x)\n{\n" \
          "\treturn SUM(x, 1);\n}\n"
    p = S.plan([(1, diff("lib/s.c", src, src.replace("((a) +", "((a) -")))], {"lib/s.c": src})
    assert p.fallback == {1: "lib/s.c:2: in a macro body, no whole statements before it ends"}
