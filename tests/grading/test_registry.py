import json
import re
from pathlib import Path

import pytest

from fleetlab.core.errors import HiddenCasesMissing, InvalidInput
from fleetlab.course.grading import Case, CaseOutcome, get_check, register, registry


def test_a_check_of_a_shipped_lab_is_found_by_importing_its_module():
    check = get_check("00.planes")
    assert check.lab == "00"
    assert check.points == 1
    assert check.public and check.hidden_cases == 4
    assert check.hidden == (), "the learner's library carries no hidden case"
    assert "00" in registry.known_labs()


def test_hidden_cases_are_added_by_the_grader_and_asked_for_in_vain_without_them():
    check = get_check("00.planes")
    with pytest.raises(HiddenCasesMissing, match="instructor's package"):
        check.cases(include_hidden=True)
    with pytest.raises(InvalidInput, match="declares 4 hidden cases, not 1"):
        check.with_hidden([Case("one")])


@pytest.mark.parametrize("bad", ["planes", "0.planes", "00.Planes", "00.", 7])
def test_a_malformed_id_is_refused_with_the_expected_shape(bad):
    with pytest.raises(InvalidInput) as raised:
        get_check(bad)
    assert raised.value.field == "check_id"
    assert '"01.visibility"' in str(raised.value)


def test_an_unknown_id_names_the_checks_its_lab_has():
    with pytest.raises(InvalidInput) as raised:
        get_check("00.plains")
    assert "00.planes" in str(raised.value)


def test_a_check_needs_a_public_case():
    with pytest.raises(InvalidInput) as raised:
        register("98.empty", title="no cases", public=[])
    assert raised.value.field == "public"


def test_registering_an_id_again_replaces_the_check_and_keeps_the_harness_callable():
    def first(answer, case, ctx):
        return CaseOutcome(True)

    def second(answer, case, ctx):
        return CaseOutcome(False, "replaced")

    assert register("96.twice", title="one", public=[Case("a")])(first) is first
    register("96.twice", title="two", public=[Case("a")], hidden_cases=1)(second)
    check = get_check("96.twice").with_hidden([Case("b")])
    assert check.title == "two"
    assert [(case.name, hidden) for case, hidden in check.cases(include_hidden=True)] == [("a", False), ("b", True)]
    assert [case.name for case, _ in check.cases(include_hidden=False)] == ["a"]
    assert [c.id for c in registry.checks_of("96")] == ["96.twice"]


def test_two_cases_with_one_name_are_refused():
    with pytest.raises(InvalidInput, match="two cases with one name"):
        register("96.same", title="same", public=[Case("a"), Case("a")])
    register("96.apart", title="apart", public=[Case("a")], hidden_cases=1)(lambda answer, case, ctx: None)
    with pytest.raises(InvalidInput, match="two cases with one name") as raised:
        get_check("96.apart").with_hidden([Case("a")])
    assert raised.value.field == "hidden"


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_a_count_of_hidden_cases_that_is_no_count_is_refused(bad):
    with pytest.raises(InvalidInput) as raised:
        register("96.count", title="count", public=[Case("a")], hidden_cases=bad)
    assert raised.value.field == "hidden_cases"


def test_isolated_forgets_what_was_registered_inside_and_keeps_the_shipped_checks():
    shipped = {check.id for lab in registry.shipped_labs() for check in registry.checks_of(lab)}
    with registry.isolated():
        register("95.inside", title="inside", public=[Case("a")])(lambda answer, case, ctx: CaseOutcome(True))
        assert get_check("95.inside").title == "inside"
    with pytest.raises(InvalidInput):
        get_check("95.inside")
    assert shipped <= {check.id for lab in registry.shipped_labs() for check in registry.checks_of(lab)}


def test_the_scoring_line_says_how_points_split():
    planes = get_check("00.planes")
    assert planes.scoring() == "1 point, 0.125 for each of 8 cases (4 here, 4 more at grading)"
    assert planes.case_points() == 0.125


def test_each_shipped_function_check_asks_for_the_parameters_of_its_notebooks_stub():
    labs = Path(__file__).resolve().parents[2] / "labs"
    stubs = {}
    for notebook in sorted(labs.glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            for name, parameters in re.findall(r"^def (\w+)\(([^)]*)\)", "".join(cell["source"]), re.M):
                stubs.setdefault(name, " ".join(parameters.split()))
    checks = [check for lab in registry.shipped_labs() for check in registry.checks_of(lab) if check.function]
    assert checks
    assert {check.id: check.parameters for check in checks} == {check.id: stubs.get(check.function) for check in checks}
