"""--engram-random N / random_cases(..., type=T): N cases of type T, each the case conform --random draws there."""
import pytest

import engram_conformance as engram
from engram_test_util import plugin_args


@pytest.mark.parametrize("suite, type_", [("hash_v41", "HashTest"), ("hash_v41", "HashStateTest"),
                                          ("multipliers", "MultipliersTest")])
def test_n_cases_of_the_type_each_the_streams_case(suite, type_):
    typed = engram.random_cases(suite, 7, 25, type_)
    assert len(typed) == 25 and all(c.type == type_ for c in typed)
    numbers = [c.tc_id for c in typed]
    assert numbers == sorted(set(numbers)) and numbers[-1] > 25  # not every case of the suite has this type
    # The untyped stream (conform --random's, byte-checked against the CLI in test_cli_equal) filtered by type.
    whole = [c for c in engram.random_cases(suite, 7, numbers[-1]) if c.type == type_]
    assert [(c.tc_id, c.test) for c in whole] == [(c.tc_id, dict(c.test, tcId=c.tc_id)) for c in typed]
    assert typed[0].id == f"random:{suite}-tc{numbers[0]}"


def test_a_type_the_suite_has_not_is_refused():
    with pytest.raises(engram.Error, match=r"type 'HashTst': suite hash_v41 has no tests of this type"):
        engram.random_cases("hash_v41", 1, 5, "HashTst")


def test_the_plugin_adds_n_cases_of_the_tests_type(pytester):
    pytester.makepyfile(test_port='''
import engram_conformance as engram
@engram.cases("hash_v41", type="HashTest")
def test_hash(engram_case):
    engram_case.check(lambda c: {"rows": engram.hash(c.layout, c.inputs["ids"])})
''')
    r = pytester.runpytest_subprocess(*plugin_args(), "--collect-only", "-q", "--engram-random", "40")
    ids = [line for line in r.stdout.lines if "random:" in line]
    assert len(ids) == 40, r.stdout.str()[-2000:]
