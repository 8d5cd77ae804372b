"""A manifest whose topics depend on one another in a chain of 1,500 (and
one where that chain closes into a cycle): dependency walks are
iterative, so the first loads and runs, and the second is refused in one
line, exit status 2, never a RecursionError."""

from __future__ import annotations

N = 1500


def _chain(text: str, cycle: bool) -> str:
    topics = []
    for i in range(N):
        dep = f"[t{i - 1}]" if i else (f"[t{N - 1}]" if cycle else "[names]")
        topics.append(f"  t{i}:\n    description: link {i}\n    branch: topic/t{i}\n"
                      f"    depends: {dep}\n")
    text = text.replace("integration:\n", "".join(topics) + "integration:\n", 1)
    return text.replace("topics: [compiler, counters, names]",
                        "topics: [compiler, counters, names, "
                        + ", ".join(f"t{i}" for i in range(N)) + "]")


def test_a_long_chain_loads(project, ktopic):
    project.manifest.write_text(_chain(project.manifest.read_text(), cycle=False))
    r = ktopic(*project.args("status"))
    assert "RecursionError" not in r.err and r.status == 1, r
    assert f"topic/t{N - 1}" in r.out or f"t{N - 1}" in r.out, r


def test_a_long_cycle_is_refused_in_one_line(project, ktopic):
    project.manifest.write_text(_chain(project.manifest.read_text(), cycle=True))
    r = ktopic(*project.args("status"))
    assert r.status == 2, r
    assert r.err.count("\n") == 1 and "dependency cycle: " in r.err, r
    assert r.err.startswith("ktopic: branches.yaml:"), r
