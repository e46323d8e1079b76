"""``medexam consult convert`` and ``consult stats``: consultation cases made from
multiple-choice questions, and a case set described as the consultation paper describes its
own (Table 1, Figure 4)."""

from __future__ import annotations

import json

import click

from engine.cli.common import COUNT, AppContext, echo_json, json_option, pass_app
from engine.cli.running import cancelled_on_interrupt, progress_bar
from engine.consult.cases import cases as cases_mod
from engine.consult.cases.cases import CaseError
from engine.text.columns import visible

#: Questions left out listed by name after a conversion (--json lists them all).
SHOWN = 20


@click.command("convert")
@click.option("--dataset", required=True, help="Exam data set holding the questions.")
@click.option("--converter", "--model", "converter", help="Model that writes the cases "
              "(default: the default chat model; a served one gives the paper's quality).")  # fmt: skip
@click.option("--name", help="Case data set to store the drafts in (the whole data set).")
@click.option("--item", "item_id", help="Only this question: its draft printed as JSON.")
@click.option("--limit", type=COUNT, help="Only the first N questions.")
@click.option("--concurrency", type=click.IntRange(1, 256),
              help="Questions in flight at once (default: as many as the converter takes).")  # fmt: skip
@click.option("--replace", is_flag=True, help="Start again instead of going on with --name.")
@click.option("--save", "save_name", help="With --item: store the draft in this case data set.")
@click.option("--yes", is_flag=True, help="With --item --save: save without asking.")
@json_option
@pass_app
def consult_convert(
    app: AppContext,
    dataset: str,
    converter: str | None,
    name: str | None,
    item_id: str | None,
    limit: int | None,
    concurrency: int | None,
    replace: bool,
    save_name: str | None,
    yes: bool,
    as_json: bool,
) -> None:
    """Turn a multiple-choice data set into draft consultation cases, as the consultation
    paper built its test sets: questions with no patient information are left out (counted
    and listed). One resumable job: Ctrl-C, then the same command goes on where it stopped.

    \b
    medexam consult convert --dataset medqa-test --converter smollm2 --name medqa-cases
    medexam consult convert --dataset medqa-test --item 12      (one draft, printed)
    """
    if item_id is not None:
        _convert_one(app, dataset, item_id, converter, save_name, yes)
        return
    if not name:
        raise click.UsageError("give --name CASES (or --item ID for one question)")
    from engine.consult.cases.convert import convert_dataset
    from engine.core.progress import Cancel

    app.store.dataset(dataset)  # an unknown data set fails here, in one line
    said = f"stopped; the same command goes on where it stopped (cases so far in {name!r})"
    bar = progress_bar(f"{converter or 'model'} converting {dataset}", as_json)
    with cancelled_on_interrupt(lambda: said), bar as update:
        found = convert_dataset(app.store, dataset, name, converter, limit=limit,
                                concurrency=concurrency, replace=replace, progress=update,
                                cancel=Cancel())  # fmt: skip
    if as_json:
        echo_json(found)
        return
    click.echo(
        f"{found['converted']} cases in {name!r} from {found['questions']} questions of "
        f"{dataset!r} ({found['new']} done now in {found['seconds']:g} s); left out: "
        f"{found['filtered']} with no patient information, {found['too_long']} too long for "
        f"the converter's context, {found['refused'] - found['too_long']} other"
    )
    for x in found["left_out"][:SHOWN]:
        click.echo(visible(f"  left out {x['item']}: {x['reason']}"))
    if len(found["left_out"]) > SHOWN:
        click.echo(f"  … and {len(found['left_out']) - SHOWN} more (--json lists them all)")
    click.echo(f"review the drafts: medexam consult cases --cases {name}; "
               f"describe them: medexam consult stats --cases {name}")  # fmt: skip


def _convert_one(
    app: AppContext,
    dataset: str,
    item_id: str,
    converter: str | None,
    save_name: str | None,
    yes: bool,
) -> None:
    """One question's draft printed as JSON, stored in ``save_name`` when asked."""
    from engine.consult.cases.draft import draft_case
    from engine.models.pool import default_pool

    item = next((i for i in app.store.items(dataset) if str(i.get("id")) == item_id), None)
    if item is None:
        raise CaseError(f"no item {item_id!r} in data set {dataset!r}")
    with default_pool().lease(converter) as model:
        case = draft_case(item, model, dataset=dataset, model_name=converter or "model")
    click.echo(json.dumps(case.to_dict(), ensure_ascii=False, indent=2))
    if save_name:
        if yes or click.confirm(f"Save this case to {save_name!r}?", default=False):
            cases_mod.add_case(app.store, save_name, case)
            click.echo(f"saved {case.id!r} in {save_name!r}")
        else:
            click.echo("not saved")


@click.command("stats")
@click.option("--cases", "cases_name", help="Case data set (default: cases-sample).")
@click.option("--top", type=COUNT, default=20, show_default=True, help="Keys in Figure 4.")
@json_option
@pass_app
def consult_stats(app: AppContext, cases_name: str | None, top: int, as_json: bool) -> None:
    """A case set as the consultation paper describes its test sets: Table 1 (instances,
    options per question, tokens of information and of request, facts per case) and
    Figure 4 (the most frequent fact keys, as a bar list)."""
    from engine.consult.cases.stats import render, stats

    name = cases_name or cases_mod.ensure_sample(app.store)
    found = stats(cases_mod.load_cases(app.store, name), top)
    if as_json:
        echo_json({"cases": name, **found})
        return
    click.echo(visible(render(found, name), newlines=True))
