"""Choosing any kept candidate: ticks on one page of the list keep the picks of the others, the
plan page filters, searches and pages the whole kept list, and the compare view sets two to
four chosen candidates side by side."""

from __future__ import annotations

import re

import pytest
from django.template.defaultfilters import pluralize

from apps.audit.models import AuditEvent
from apps.catalog.models import Accelerator
from apps.selections import services
from apps.selections.templatetags.bands import RANKED_BY_WORDS
from tests.selections.helpers import create_selection

pytestmark = pytest.mark.django_db


@pytest.fixture
def wide(catalog, alice, acme, goal_payload):
    """A selection over every curated accelerator: some hundreds of kept candidates."""
    slugs = list(Accelerator.objects.values_list("slug", flat=True))
    goal_payload["constraints"].update(accelerators=slugs, max_gpus=2)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)
    assert selection.candidates.filter(outcome="kept").count() > 200
    return selection


def kept(selection, rank):
    return selection.candidates.get(outcome="kept", rank=rank)


def chosen_ranks(selection):
    return sorted(selection.candidates.filter(chosen=True).values_list("rank", flat=True))


def tick(client, url, *, shown, chosen=(), unchoose=()):
    return client.post(
        url,
        {
            "shown": [str(c.pk) for c in shown],
            "chosen": [str(c.pk) for c in chosen],
            "unchoose": [str(c.pk) for c in unchoose],
        },
    )


def test_choosing_on_page_five_keeps_the_picks_of_page_one(wide, alice_client):
    url = f"/selections/{wide.pk}/candidates/"
    first_page = [kept(wide, rank) for rank in range(1, 51)]
    fifth_page = [kept(wide, rank) for rank in range(201, 251)]

    tick(alice_client, f"{url}?page=1", shown=first_page, chosen=first_page[:2])
    response = tick(alice_client, f"{url}?page=5", shown=fifth_page, chosen=fifth_page[26:27])

    assert response.status_code == 302
    assert response["Location"] == f"{url}?page=5"
    assert chosen_ranks(wide) == [1, 2, 227]
    page = alice_client.get(f"{url}?page=1").content.decode()
    assert page.count('data-chosen="') == 3, "the tray lists every chosen candidate"
    assert f'id="choose-{first_page[0].pk}" checked' in page


def test_unticking_a_shown_row_or_the_trays_unchoose_button_unchooses_it(wide, alice_client):
    url = f"/selections/{wide.pk}/candidates/?page=1"
    first_page = [kept(wide, rank) for rank in range(1, 51)]
    far = kept(wide, 300)
    tick(alice_client, url, shown=first_page, chosen=first_page[:3])
    tick(alice_client, f"/selections/{wide.pk}/candidates/?page=6", shown=[far], chosen=[far])

    tick(alice_client, url, shown=first_page, chosen=first_page[1:3])
    assert chosen_ranks(wide) == [2, 3, 300]

    tick(alice_client, url, shown=first_page, chosen=first_page[1:3], unchoose=[far])
    assert chosen_ranks(wide) == [2, 3]


def test_each_choice_writes_an_audit_event_with_the_before_and_after(wide, alice_client):
    leader = kept(wide, 1)
    tick(alice_client, f"/selections/{wide.pk}/plan/", shown=[leader], chosen=[leader])

    event = AuditEvent.objects.filter(action="selection.candidates_choose", team=wide.team).latest(
        "pk"
    )
    assert event.before == {"chosen": []}
    assert event.after == {"chosen": [leader.pk]}


def test_another_teams_candidate_ids_are_refused_and_nothing_changes(
    wide, alice_client, charlie, globex, goal_payload
):
    theirs = create_selection(user=charlie, team=globex, payload=goal_payload)
    services.candidates_compute(actor_user=charlie, selection=theirs)
    foreign = theirs.candidates.filter(outcome="kept").first()
    leader = kept(wide, 1)

    response = alice_client.post(
        f"/selections/{wide.pk}/plan/",
        {"shown": [str(leader.pk)], "chosen": [str(leader.pk), str(foreign.pk)]},
        follow=True,
    )

    assert "Not kept candidates of this selection" in response.content.decode()
    assert chosen_ranks(wide) == []
    assert not theirs.candidates.filter(chosen=True).exists()


def test_an_outsider_cannot_choose_on_someone_elses_selection(wide, charlie_client):
    leader = kept(wide, 1)
    response = tick(
        charlie_client, f"/selections/{wide.pk}/candidates/", shown=[leader], chosen=[leader]
    )
    assert response.status_code == 404
    assert chosen_ranks(wide) == []


def rows_of(page: str) -> int:
    return page.count('<tr data-candidate="')


def test_the_plan_page_pages_the_whole_kept_list(wide, alice_client):
    url = f"/selections/{wide.pk}/plan/"
    count = wide.candidates.filter(outcome="kept").count()
    last = (count + 49) // 50

    page = alice_client.get(f"{url}?page={last}").content.decode()

    assert rows_of(page) == count - 50 * (last - 1)
    assert f'data-rank="{count}"' in page
    assert f"Page {last} of {last}" in page


@pytest.mark.parametrize(
    ("query", "field", "value"),
    [
        ("accelerator=l4", "accelerator", "l4"),
        ("engine=sglang", "engine", "sglang"),
        ("gpu_count=2", "gpu_count", 2),
    ],
)
def test_the_plan_page_filters_by_stack_field(wide, alice_client, query, field, value):
    expected = [c for c in wide.candidates.filter(outcome="kept") if c.stack[field] == value]
    assert 0 < len(expected) < wide.candidates.filter(outcome="kept").count()

    page = alice_client.get(f"/selections/{wide.pk}/plan/?{query}").content.decode()

    assert rows_of(page) == min(len(expected), 50)
    assert f"({len(expected)} matching)" in page


@pytest.mark.parametrize(("value", "with_layer"), [("none", False), ("only", True)])
def test_the_plan_page_lists_the_engines_alone_or_only_stacks_with_a_serving_layer(
    wide, alice_client, value, with_layer
):
    kept = list(wide.candidates.filter(outcome="kept"))
    expected = [c for c in kept if bool(c.stack["layers"]) is with_layer]
    assert 0 < len(expected) < len(kept)

    page = alice_client.get(f"/selections/{wide.pk}/plan/?layers={value}").content.decode()

    assert f"({len(expected)} matching)" in page


def test_the_plan_page_filters_by_precision_with_an_empty_state(wide, alice_client):
    url = f"/selections/{wide.pk}/plan/"
    count = wide.candidates.filter(outcome="kept").count()

    assert f"({count} matching)" in alice_client.get(f"{url}?precision=bf16").content.decode()
    page = alice_client.get(f"{url}?precision=fp8").content.decode()
    assert "(0 matching)" in page
    assert "No kept candidate matches these filters." in page


def test_the_plan_page_searches_the_stack_text(wide, alice_client):
    backend = next(
        c.stack["backend"] for c in wide.candidates.filter(outcome="kept") if c.stack["backend"]
    )
    expected = [
        c for c in wide.candidates.filter(outcome="kept") if backend in str(c.stack).lower()
    ]

    page = alice_client.get(f"/selections/{wide.pk}/plan/?q={backend.upper()}").content.decode()

    assert rows_of(page) == min(len(expected), 50)
    assert f"({len(expected)} matching)" in page


def test_the_chosen_stay_listed_whatever_the_filter(wide, alice_client):
    far = kept(wide, 250)
    tick(alice_client, f"/selections/{wide.pk}/plan/", shown=[far], chosen=[far])
    other = "l4" if far.stack["accelerator"] != "l4" else "h100-sxm"

    page = alice_client.get(f"/selections/{wide.pk}/plan/?accelerator={other}").content.decode()

    assert f'data-chosen="{far.pk}"' in page
    assert 'id="create-plan"' in page


def choose(client, selection, ranks):
    picks = [kept(selection, rank) for rank in ranks]
    tick(client, f"/selections/{selection.pk}/plan/", shown=picks, chosen=picks)
    return picks


def compare(client, selection, picks):
    return client.get(f"/selections/{selection.pk}/compare/", {"ids": [str(c.pk) for c in picks]})


@pytest.mark.parametrize("count", [2, 3, 4])
def test_two_to_four_chosen_candidates_are_compared_side_by_side(wide, alice_client, count):
    picks = choose(alice_client, wide, [1, 7, 230, 301][:count])

    response = compare(alice_client, wide, picks)

    assert response.status_code == 200
    page = response.content.decode()
    for candidate in picks:
        assert f'<th scope="col" data-candidate="{candidate.pk}">#{candidate.rank} ' in page
    assert page.count('data-field="backends"') == count
    assert page.count('data-field="estimate"') == count
    assert "method: " in page
    ranked_by = picks[0].estimate["ranked_by"]
    assert f"ranked by {RANKED_BY_WORDS[ranked_by]}" in page and f"by {ranked_by}" not in page


def test_the_compare_view_names_the_method_beside_each_gpu_count(wide, alice_client):
    picks = choose(alice_client, wide, [1, 7])

    page = compare(alice_client, wide, picks).content.decode()

    for candidate in picks:
        gpus, label = candidate.estimate["gpus_for_peak"], candidate.estimate["label"]
        assert f"{gpus} GPU{pluralize(gpus)} for the peak rate ({label})" in page


def test_the_compare_view_shows_each_kernel_backend(wide, alice_client):
    with_backend = [c for c in wide.candidates.filter(outcome="kept") if c.stack["backend"]][:2]
    for candidate in with_backend:
        candidate.chosen = True
        candidate.save(update_fields=["chosen"])

    page = compare(alice_client, wide, with_backend).content.decode()

    for candidate in with_backend:
        assert f'<td data-field="backends">{", ".join(candidate.stack["backends"])}' in page


def test_one_candidate_is_refused_with_a_message(wide, alice_client):
    picks = choose(alice_client, wide, [1])

    response = compare(alice_client, wide, picks)

    assert response.status_code == 400
    assert "Tick 2 to 4 chosen candidates to compare; you ticked 1." in response.content.decode()


def test_five_candidates_are_refused_with_a_message(wide, alice_client):
    picks = choose(alice_client, wide, [1, 2, 3, 4, 5])

    response = compare(alice_client, wide, picks)

    assert response.status_code == 400
    assert "you ticked 5." in response.content.decode()


def test_unchosen_and_other_teams_candidates_cannot_be_compared(
    wide, alice_client, charlie, globex, goal_payload
):
    picks = choose(alice_client, wide, [1])
    theirs = create_selection(user=charlie, team=globex, payload=goal_payload)
    services.candidates_compute(actor_user=charlie, selection=theirs)
    foreign = theirs.candidates.filter(outcome="kept").first()

    for other in (kept(wide, 2), foreign):
        response = compare(alice_client, wide, [picks[0], other])
        assert response.status_code == 400
        assert "Only candidates chosen for this selection can be compared." in (
            response.content.decode()
        )
    assert compare(alice_client, wide, []).status_code == 400


def test_an_outsider_gets_404_on_the_compare_view(wide, alice_client, charlie_client):
    picks = choose(alice_client, wide, [1, 2])
    assert compare(charlie_client, wide, picks).status_code == 404


def test_a_value_no_kept_candidate_has_is_a_form_error_not_a_500(wide, alice_client):
    response = alice_client.get(f"/selections/{wide.pk}/plan/?gpu_count=two")

    assert response.status_code == 200
    page = response.content.decode()
    assert "Select a valid choice. two is not one of the available choices." in page
    assert rows_of(page) == 50, "the list stays unfiltered"


def test_the_plan_filters_offer_the_values_the_kept_candidates_have(wide, alice_client):
    page = alice_client.get(f"/selections/{wide.pk}/plan/").content.decode()
    kept = list(wide.candidates.filter(outcome="kept"))

    for field in ("engine", "accelerator", "precision", "gpu_count"):
        values = {c.stack[field] for c in kept}
        assert page.count(f'<select name="{field}"') == 1
        for value in values:
            assert f'<option value="{value}"' in page
    assert '<option value="fp8"' not in page


def test_a_recompute_of_the_same_goal_chooses_the_same_stacks_again(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)
    picks = [kept(selection, 1), kept(selection, 3), kept(selection, 4)]
    services.candidates_choose(
        actor_user=alice, selection=selection, candidate_ids=[c.pk for c in picks]
    )
    services.candidates_compute(actor_user=alice, selection=selection)  # every pick kept again
    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()
    assert 'id="chosen-lost"' not in page and page.count("data-chosen=") == 3
    picks = list(selection.candidates.filter(chosen=True).order_by("rank"))
    # a stack the catalog no longer offers (say, a release taken out) is not kept again
    retired = {**picks[2].stack, "engine_version": "0.0-retired"}
    selection.candidates.filter(pk=picks[2].pk).update(stack=retired)

    services.candidates_compute(actor_user=alice, selection=selection)

    chosen = selection.candidates.filter(chosen=True)
    assert [c.stack for c in chosen.order_by("rank")] == [p.stack for p in picks[:2]]
    assert not chosen.filter(pk__in=[p.pk for p in picks]).exists()  # new rows
    event = AuditEvent.objects.filter(action="selection.candidates_compute").latest("pk")
    assert (event.after["chosen_again"], event.after["chosen_no_longer_kept"]) == (2, [retired])
    assert event.message.endswith("; 2 chosen stacks chosen again, 1 no longer kept")
    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()
    lost = page.split('id="chosen-lost">', 1)[1].split("</p>", 1)[0]
    assert lost.startswith("1 stack you had chosen is not kept by the last computation")
    assert "0.0-retired" in lost and picks[0].stack["engine_version"] not in lost.split(":", 1)[1]
    plan = alice_client.get(f"/selections/{selection.pk}/plan/").content.decode()
    assert plan.split('id="chosen-lost">', 1)[1].split("</p>", 1)[0] == lost


def test_every_row_of_the_plan_page_names_the_method_of_its_goodput(wide, alice_client):
    page = alice_client.get(f"/selections/{wide.pk}/plan/").content.decode()

    cells = re.findall(r'<tr data-candidate="(\d+)".*?<td>([^<]*req/s[^<]*)</td></tr>', page, re.S)
    assert len(cells) == rows_of(page) == 50
    estimates = dict(wide.candidates.values_list("pk", "estimate"))
    for pk, cell in cells:
        estimate = estimates[int(pk)]
        figure = f"{estimate['goodput_per_gpu_rps']:.3f} req/s ({estimate['label']})"
        assert cell.strip() == figure
