"""No import circles between privlab's modules (issue 32, item 2), imports inside functions
included: grimp (import-linter's graph) finds every strongly connected component of the
module graph, and there is none.  The last three (each sanitizer <-> its Spark engine) went
with the engine seam: each sanitizer's core (``anatomy_core``, ``generalization_core``,
``pram_core``) lies below its engines, which import it, never the reverse."""

from __future__ import annotations

import grimp


def circles(graph) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[frozenset[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.add(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(frozenset(comp))
    return out


def test_the_circle_finder_finds_a_circle_and_nothing_else():
    g = grimp.ImportGraph()
    for m in ("a", "b", "c", "d"):
        g.add_module(m)
    g.add_import(importer="a", imported="b")
    g.add_import(importer="b", imported="c")
    g.add_import(importer="c", imported="a")
    g.add_import(importer="d", imported="a")
    assert circles(g) == [frozenset({"a", "b", "c"})]
    g.remove_import(importer="c", imported="a")
    assert circles(g) == []


def test_no_import_circles():
    found = circles(grimp.build_graph("privlab"))
    assert not found, f"import circles: {[sorted(c) for c in found]}"
