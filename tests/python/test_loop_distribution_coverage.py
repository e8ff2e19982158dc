"""mlbridge.train.loop_distribution.coverage: the counts of the plugin's
per-loop log lines (what the model is asked about, what it does, why the
other loops are declined)."""

from mlbridge.train.loop_distribution.coverage import markdown, reason_class, summarize


def _rec(result, nodes=0, reason=""):
    return {"result": result, "nodes": nodes, "reason": reason}


def test_reasons_group_without_their_numbers():
    assert reason_class("more than 64 instructions") == "more than N instructions"
    assert reason_class("more than 7 memory accesses") == "more than N memory accesses"
    assert reason_class("") == "(none)"


def test_summary_counts_what_the_model_saw():
    s = summarize([_rec("declined", reason="not in LCSSA form"),
                   _rec("declined", reason="more than 200 instructions"),
                   _rec("declined", reason="more than 300 instructions"),
                   _rec("unchanged", 1, "one node: nothing to distribute"),
                   _rec("unchanged", 3),
                   _rec("distributed", 2),
                   _rec("invalid", 4, "part 1 before part 0")])
    assert s["loops"] == 7
    assert s["to_model"] == 3          # nodes >= 2, not declined
    assert s["results"] == {"declined": 3, "unchanged": 2, "distributed": 1, "invalid": 1}
    assert s["reasons"]["more than N instructions"] == 2
    assert "one node: nothing to distribute" in s["reasons"]


def test_table_totals_every_source():
    per = {"a": dict(summarize([_rec("distributed", 2), _rec("unchanged", 2)]), kind="corpus"),
           "b": dict(summarize([_rec("declined", reason="x"), _rec("distributed", 3)]),
                     kind="project")}
    table = markdown(per).splitlines()
    total = [c.strip() for c in table[-1].strip("|").split("|")]
    # source, kind, loops, to the model, distributed, kept one loop, "x", other
    assert total[2:] == ["4", "3", "2", "1", "1", "0"]
