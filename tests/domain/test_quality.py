"""The quality probe's checks, agreement and flag (stackselect_domain/quality.py)."""

from __future__ import annotations

import pytest
from stackselect_domain.quality import (
    BASE_PROMPTS,
    JSON_PROMPT,
    TOOL_PROMPT,
    agreement,
    check_tolerance,
    is_correct,
    probe_prompts,
    prompt_by_id,
    quality_flag,
    score_outputs,
)

ADD, CAPITAL, UPPER, DIGITS = (prompt_by_id(key) for key in ("add", "capital", "upper", "digits"))


@pytest.mark.parametrize(
    ("prompt", "text", "right"),
    [
        (ADD, " 12", True),
        (ADD, "12 apples", True),
        (ADD, "The answer: 13, not 12", False),
        (CAPITAL, " Paris.", True),
        (CAPITAL, "Lyon, not Paris, is big", False),
        (UPPER, "OK.", True),
        (UPPER, "ok", False),
        (DIGITS, "1, 2, 3", True),
        (DIGITS, "123", False),
        (ADD, None, False),
    ],
)
def test_an_answer_is_checked_by_its_prompts_kind(prompt, text, right):
    assert is_correct(prompt, text) is right


def test_a_json_schema_answer_must_hold_every_required_key():
    assert is_correct(JSON_PROMPT, 'Sure: {"city": "Paris", "country": "France"}')
    assert not is_correct(JSON_PROMPT, '{"city": "Paris"}')
    assert not is_correct(JSON_PROMPT, "Paris, France")


def test_a_tool_call_must_name_the_tool_and_the_city():
    call = [{"function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]
    assert is_correct(TOOL_PROMPT, None, call)
    wrong = [{"function": {"name": "search", "arguments": '{"city": "Paris"}'}}]
    assert not is_correct(TOOL_PROMPT, "It is sunny in Paris", wrong)


def test_structured_output_and_tools_add_their_prompts_only_when_asked():
    assert probe_prompts(structured_output=False, tools=False) == BASE_PROMPTS
    assert probe_prompts(structured_output=True, tools=True)[-2:] == (JSON_PROMPT, TOOL_PROMPT)


def test_scores_count_known_prompts_and_say_whether_they_were_simulated():
    outputs = [{"id": "add", "text": "12"}, {"id": "sky", "text": "red"}, {"id": "x", "text": ""}]
    score = score_outputs(outputs, simulated=True)
    assert (score.correct, score.total, score.mode) == (1, 2, "simulated")


def test_agreement_compares_answers_case_and_spacing_aside():
    mine = [{"id": "add", "text": " 12."}, {"id": "sky", "text": "Blue"}]
    theirs = [{"id": "add", "text": "12"}, {"id": "sky", "text": "grey"}]
    assert agreement(mine, theirs) == 0.5
    assert agreement(mine, []) is None


def test_only_a_gap_beyond_the_tolerance_is_flagged_and_speed_picks_the_words():
    assert quality_flag(0.5, 1.0, tolerance=0.05, faster=True) == "faster_but_worse"
    assert quality_flag(0.5, 1.0, tolerance=0.05, faster=False) == "worse"
    assert quality_flag(0.95, 1.0, tolerance=0.05, faster=True) is None
    assert quality_flag(None, 1.0, tolerance=0.05, faster=True) is None


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.1", True, float("nan")])
def test_a_tolerance_outside_zero_to_one_is_refused(bad):
    with pytest.raises(ValueError, match="quality_tolerance"):
        check_tolerance(bad)
