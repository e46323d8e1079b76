"""``medexam french …`` and ``medexam import frenchmedmcqa``: French pharmacy questions with
retrieved passages (a thin shell over :mod:`engine.french`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from engine.bank.blocks import choose
from engine.cli.bank import block_options, chosen_block, drawn_line, take_command
from engine.cli.common import COUNT, AppContext, echo_json, json_option, pass_app
from engine.cli.importing import import_options, sample_command
from engine.cli.running import (
    RunOptions,
    execute,
    metric_lines,
    run_options,
    run_title,
    trial_options,
)
from engine.cli.running import progress_bar as common_progress_bar
from engine.core.progress import Progress
from engine.core.scoring import activity_metrics
from engine.fields import settings_options
from engine.french import corpus as corpus_mod
from engine.french import dataset as dataset_mod
from engine.french.book import BOOKS
from engine.french.index import RETRIEVERS, Index, build_index, list_indexes, load_index
from engine.french.reader import format_letters
from engine.french.scoring import score_files
from engine.french.settings import FrenchSettings
from engine.text.columns import fmt_number


def _note(p: Progress) -> str:
    if "gold" in p.info:  # the letters chosen against the right ones (item ids are hashes)
        return f"chose {p.info.get('chosen') or '—'}, right {p.info.get('gold')}"
    return p.message


def progress_bar(description: str, quiet: bool = False) -> Any:
    """The shared progress bar, noting the letters chosen against the gold ones."""
    return common_progress_bar(description, quiet, _note, transient=True)


def _summary_lines(summary: Mapping[str, Any]) -> None:
    click.echo(f"questions   {summary['n']}")
    if summary["n"]:
        # the paper's measures (exact matches over all questions are in the run's summary)
        shown = [k for k in activity_metrics("french") if k in summary and k != "accuracy"]
        metric_lines("french", summary, shown)
        click.echo("by number of correct answers:")
        for n, block in summary["by_n_answers"].items():
            hamming, emr = (fmt_number(block[k], unit="%") for k in ("hamming", "emr"))
            click.echo(f"  {n}: n={block['n']:<5} Hamming {hamming:>5}%  EMR {emr:>5}%")
    recall = summary.get("recall_at_k")
    if recall:
        click.echo(f"recall@{recall['k']}    {recall['recall']:.2f} (n={recall['n']})")


def _warn_if_stale(app: AppContext, index: Index) -> None:
    if not index.is_fresh(app.store):
        click.echo(
            f"Warning: index {index.name!r} was not built from the current corpus "
            f"{index.corpus!r}; rebuild it with 'medexam french index'.",
            err=True,
        )


# -- import -----------------------------------------------------------------------------------


@click.command("frenchmedmcqa")
@import_options()
def import_frenchmedmcqa(
    app: AppContext, path: str, name: str | None, replace: bool, as_json: bool
) -> None:
    """Import a FrenchMedMCQA JSON file (all records are checked first; nothing is imported
    when one is invalid)."""
    from engine.importers import named_if_other_format

    with named_if_other_format(path, ("french", "frenchmedmcqa")):
        result = dataset_mod.import_frenchmedmcqa(app.store, path, name, replace=replace)
    if as_json:
        echo_json(result)
        return
    counts = ", ".join(f"{n} answer(s): {c}" for n, c in result["by_n_answers"].items())
    click.echo(f"imported {result['n_items']} questions as {result['name']!r} ({counts})")
    if result["duplicates_skipped"]:
        numbers = ", ".join(map(str, result["duplicates_skipped"]))
        click.echo(f"skipped exact repeats of earlier records: record(s) {numbers}")


# -- french group --------------------------------------------------------------------------


@click.group()
def french() -> None:
    """French pharmacy questions (FrenchMedMCQA) answered with retrieved passages."""


sample_command(
    french,
    dataset_mod.ensure_sample,
    lambda names: f"data set {names['dataset']!r} and corpus {names['corpus']!r} are ready",
    "questions and passages",
)


@french.group("corpus")
def corpus_group() -> None:
    """Passage corpora for retrieval."""


@corpus_group.command("add")
@click.argument("path", required=False, type=click.Path())
@click.option("--name", required=True, help="Corpus name.")
@click.option(
    "--from-dataset",
    "from_dataset",
    help="Make one passage of each question of this data set and its correct options.",
)
@click.option(
    "--min-chars",
    type=COUNT,
    default=corpus_mod.MIN_CHARS,
    show_default=True,
    help="Shortest passage.",
)
@click.option("--replace", is_flag=True, help="Replace a corpus of the same name.")
@json_option
@pass_app
def corpus_add(
    app: AppContext,
    path: str | None,
    name: str,
    from_dataset: str | None,
    min_chars: int,
    replace: bool,
    as_json: bool,
) -> None:
    """Add a corpus from PATH (a folder of .txt/.md files, one such file, or a JSONL file of
    {"id", "text"}) or from a data set (--from-dataset)."""
    if (path is None) == (from_dataset is None):
        raise click.UsageError("give either PATH or --from-dataset")
    if from_dataset:
        result = corpus_mod.add_corpus_from_dataset(app.store, from_dataset, name, replace)
    else:
        assert path is not None  # one of the two is given
        with progress_bar("reading documents", quiet=as_json) as cb:
            result = corpus_mod.add_corpus_from_path(
                app.store,
                path,
                name,
                replace,
                min_chars=min_chars,
                max_chars=max(min_chars, corpus_mod.MAX_CHARS),
                progress=cb,
            )
    if as_json:
        echo_json(result)
        return
    skipped = f", {result['skipped']} too short" if result.get("skipped") else ""
    click.echo(
        f"corpus {name!r}: {result['n_passages']} passages from {result['n_documents']} "
        f"documents{skipped} (fingerprint {result['fingerprint'][:12]})"
    )


@corpus_group.command("list")
@json_option
@pass_app
def corpus_list(app: AppContext, as_json: bool) -> None:
    """Stored corpora."""
    rows = app.store.corpora()
    if as_json:
        echo_json(rows)
        return
    for c in rows:
        click.echo(
            f"{c['name']:<28} {c['n_passages']:>8} passages  {c['fingerprint'][:12]}  {c['source']}"
        )


@french.command("index")
@click.option("--corpus", required=True, help="Stored corpus to index.")
@click.option("--retriever", type=click.Choice(RETRIEVERS), default="bm25", show_default=True)
@click.option("--name", help="Index name (default: CORPUS-RETRIEVER).")
@click.option(
    "--model",
    "embed_model",
    help="Local sentence-transformers folder (default: the embedded MiniLM).",
)
@click.option(
    "--method",
    type=click.Choice(["lucene", "robertson"]),
    default="lucene",
    show_default=True,
    help="BM25 IDF variant.",
)
@click.option("--force", is_flag=True, help="Rebuild even if the corpus did not change.")
@json_option
@pass_app
def french_index(
    app: AppContext,
    corpus: str,
    retriever: str,
    name: str | None,
    embed_model: str | None,
    method: str,
    force: bool,
    as_json: bool,
) -> None:
    """Build a retrieval index over a corpus (reused while the corpus is unchanged); Ctrl-C
    stops the build and keeps nothing of it (exit 130)."""
    try:
        with progress_bar(f"indexing {corpus}", quiet=as_json) as cb:
            index = build_index(
                app.store,
                corpus,
                retriever,
                name,
                progress=cb,
                model=embed_model,
                method=method,
                force=force,
            )
    except KeyboardInterrupt:
        click.echo("index build cancelled; nothing of it was kept", err=True)
        raise SystemExit(130) from None
    info = {**index.manifest, "rebuilt": index.rebuilt}
    if as_json:
        echo_json(info)
        return
    verb = "built" if index.rebuilt else "up to date:"
    click.echo(
        f"{verb} index {index.name!r} ({retriever}, {len(index)} passages, "
        f"{info.get('build_s', 0):.1f} s)"
    )


@french.command("indexes")
@json_option
def french_indexes(as_json: bool) -> None:
    """Built indexes."""
    rows = list_indexes()
    if as_json:
        echo_json(rows)
        return
    for m in rows:
        click.echo(
            f"{m['name']:<28} {m['retriever']:<7} {m['n_passages']:>8} passages  "
            f"corpus {m['corpus']}"
        )


def _number_in_document(index: Index, passage_id: int, source: str) -> int:
    """A passage's number within its document, counting from 1."""
    return 1 + sum(p["source"] == source for p in index.passages[:passage_id])


@french.command("search")
@click.option("--index", "index_name", required=True, help="Index name.")
@click.option("--query", required=True, help="Query text.")
@click.option("-k", "k", type=COUNT, default=5, show_default=True)
@json_option
def french_search(index_name: str, query: str, k: int, as_json: bool) -> None:
    """Show the best passages for a query, with the query words highlighted."""
    from engine.french.analyser import match_spans

    index = load_index(index_name)
    hits = index.search(query, k)
    if as_json:
        echo_json([h.as_dict() | {"spans": match_spans(h.text, query)} for h in hits])
        return
    from rich.console import Console
    from rich.text import Text

    console = Console()
    if not hits:
        console.print("no passage matches")
    for rank, h in enumerate(hits, start=1):
        text = Text(h.text)
        for start, end in match_spans(h.text, query):
            text.stylize("bold yellow", start, end)
        number = _number_in_document(index, h.passage_id, h.source)
        console.print(
            Text(f"{rank}. {h.label} (passage {number}, score {h.score:.4f})", style="bold")
        )
        console.print(text)
        console.print()


@french.command("score")
@click.option(
    "--gold",
    "gold_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="FrenchMedMCQA JSON file with the correct answers.",
)
@click.option(
    "--predictions",
    required=True,
    type=click.Path(dir_okay=False),
    help='JSONL file of {"id", "answer"} lines.',
)
@json_option
def french_score(gold_path: str, predictions: str, as_json: bool) -> None:
    """Hamming score and EMR of predictions against gold answers."""
    result = score_files(gold_path, predictions)
    if as_json:
        echo_json(result)
        return
    _summary_lines(result)
    if result["missing"] or result["unknown"]:
        click.echo(f"missing predictions: {result['missing']}; unknown ids: {result['unknown']}")


@french.command("stats")
@click.option("--dataset", required=True, help="Stored French data set to describe.")
@json_option
@pass_app
def french_stats(app: AppContext, dataset: str, as_json: bool) -> None:
    """A data set as the FrenchMedMCQA paper describes its own (§2.1): questions by number
    of right answers, lengths of questions and options (words, characters), vocabulary."""
    from engine.french.stats import stats_lines, stored_stats

    found = stored_stats(app.store, dataset)
    if as_json:
        echo_json(found)
        return
    for line in stats_lines(found):
        click.echo(line)


@french.command("run")
@click.option("--dataset", help="Data set to answer (not with --resume).")
@settings_options(FrenchSettings)
@click.option(
    "--no-context",
    is_flag=True,
    help="Give the model no passage (the default when --index is not given).",
)
@trial_options
@run_options
@pass_app
def french_run(
    app: AppContext,
    dataset: str | None,
    settings: FrenchSettings,
    no_context: bool,
    trials: int,
    resume_set: str | None,
    run: RunOptions,
) -> None:
    """Answer a data set with a model and store the run. A passage made from a question is
    never given for that same question unless --oracle-passages says so."""
    if settings.index and no_context:
        raise click.UsageError("--index and --no-context exclude each other")
    if run.resume is None and resume_set is None and not dataset:
        raise click.UsageError("give --dataset (or --resume RUN_ID)")
    if run.resume is None and settings.index:
        _warn_if_stale(app, load_index(settings.index))
    if settings.reader:  # before the progress bar: a reader that is not there is one line
        from engine.train.artefacts import find

        find(settings.reader, "reader")

    def show(summary: dict[str, Any]) -> None:
        if run.quiet:
            echo_json(summary)
            return
        s = summary.get("settings") or {}
        where = f"{s.get('k')} passage(s) from {s['index']}" if s.get("index") else "no passage"
        click.echo(
            f"run {summary['run_id']} {summary['status']}: {summary['model']} on "
            f"{summary['dataset']}, {where}, method {s.get('method')}"
        )
        _summary_lines(summary)
        if summary.get("oracle"):
            click.echo("oracle run: each question may see the passage made from it")
        elif s.get("index"):
            n = summary.get("own_passages_excluded", 0)
            if n:
                click.echo(f"own passage left out for {n} question(s)")

    title = run_title(app, settings.reader or settings.model, dataset, run)
    execute(app, "french", dataset, settings, run, trials, resume_set, title=title, show=show,
            note=_note)  # fmt: skip


def _reply(app: AppContext, profile: str, dataset: str, key: str) -> str:
    """The letters typed for one question; ``m`` and ``n`` mark and note it on the way."""
    while True:
        reply = click.prompt(
            "Vos réponses (ex. A + D ; m marque, n note, q pour arrêter)",
            default="",
            show_default=False,
        ).strip()
        if not take_command(reply, app.store, profile, "french", dataset, key, click.echo, False):
            return reply


@french.command("take")
@click.option("--dataset", help="Data set to practise (needed unless --resume).")
@click.option(
    "--limit", type=COUNT, default=None, help="N questions drawn at random (see --in-order)."
)
@click.option("--index", "index_name", help="Show passages from this index.")
@click.option("-k", "k", type=COUNT, default=1, show_default=True)
@click.option(
    "--passages",
    "book",
    type=click.Choice(BOOKS),
    default=None,
    help="open: passages with the question (the default with --index); closed: only once "
    "answered, with what in them bears on each option; none: no passage.",
)
@click.option("--profile", help="Who is practising (default: the default profile).")
@click.option(
    "--resume",
    type=int,
    metavar="ID",
    help="Go on with session ID (quit or killed) where it stopped, with its own settings.",
)
@block_options
@pass_app
def french_take(
    app: AppContext,
    /,
    dataset: str | None,
    limit: int | None,
    index_name: str | None,
    k: int,
    book: str | None,
    profile: str | None,
    resume: int | None,
    **block: Any,
) -> None:
    """Practise in the terminal: answer with letters (e.g. "A + D"), empty to skip, q to stop;
    m marks the question, n writes a note on it. The questions are drawn at random, in a
    random order (--limit N: N of them); --seed takes the same block again, --in-order
    takes them in file order. A custom block as for `exam take`: --pool, --subject (the
    number of right answers: single, multiple), --difficulty. --passages closed shows the
    passages after each answer, each option with the passage sentences bearing on it.
    Every answer is stored as it is given: --resume ID goes on with a session quit or
    killed (its run id, shown at the start) where it stopped."""
    from engine.french.person import FrenchSitting
    from engine.review.profiles import resolve

    if resume is not None:
        seed = (app.store.run(resume)["settings"] or {}).get("seed")
        _take(app, _resumed_sitting(app, resume), seed)
        return
    if dataset is None:
        raise click.UsageError("--dataset is needed (or --resume ID)")
    book = book or ("open" if index_name else "none")
    if book != "none" and not index_name:
        raise click.UsageError(f"--passages {book} needs --index NAME")
    index = load_index(index_name) if index_name and book != "none" else None
    if index is not None:
        _warn_if_stale(app, index)
    profile = resolve(app.store, profile, create=True)
    chosen = chosen_block(app.store, profile, "french", dataset, limit, None, block)
    keys = choose(app.store, chosen, profile) if chosen is not None else None
    if chosen is not None:
        dataset, limit = chosen.dataset, None
    session = FrenchSitting(
        app.store, dataset, limit, index, k, profile=profile, keys=keys, seed=block["seed"],
        book=book,
    )  # fmt: skip
    _take(app, session, block["seed"])


def _resumed_sitting(app: AppContext, run_id: int) -> Any:
    """Stored session ``run_id`` to go on with, with its own index, ``k`` and passages."""
    from engine.french.person import FrenchSitting

    settings = app.store.run(run_id)["settings"] or {}
    name, book = settings.get("index"), str(settings.get("book") or "none")
    index = load_index(str(name)) if name and book != "none" else None
    return FrenchSitting.resume(app.store, run_id, index, int(settings.get("k") or 1))


def _take(app: AppContext, session: Any, seed: int | None) -> None:
    """Ask the sitting's questions left at the prompt, each answer going to its run loop,
    and show the summary."""
    from rich.console import Console
    from rich.text import Text

    profile, dataset, book = session.profile, session.dataset, session.book
    click.echo(drawn_line(len(session), seed))
    done = len(session) - session.left
    before = f", {done} answered before" if done else ""
    click.echo(
        f"stored as run {session.run_id}{before} (--resume {session.run_id} goes on with it)"
    )
    console = Console()
    while not session.done:
        view = session.question()
        console.rule(f"Question {view.position + 1}/{view.total}")
        _print_passages(console, view)
        console.print(Text(view.question, style="bold"))
        for letter, option in view.options:
            console.print(f"  {letter.upper()}. {option}")
        reply = _reply(app, profile, dataset, view.id)
        if reply.lower() in ("q", "quit", "quitter"):
            break
        fb = session.answer(reply)
        verdict = "[green]exact[/green]" if fb.exact else "[red]inexact[/red]"
        console.print(
            f"{verdict}: vous avez choisi {format_letters(fb.chosen) or '—'}, "
            f"réponse {format_letters(fb.gold)} (Hamming {fb.hamming:.2f})"
        )
        if book == "closed":
            _print_passages(console, session.question(view.position))
    summary = session.finish()
    console.rule("Bilan")
    click.echo(f"run {summary['run_id']}: {summary['answered']}/{summary['total']} answered")
    _summary_lines(summary)


def _print_passages(console: Any, view: Any) -> None:
    """A question's passages, the query words in bold; closed book, after them each option
    with the passage sentences bearing on it, its words in bold."""
    from rich.text import Text

    def marked(text: str, spans: list[tuple[int, int]], style: str) -> Text:
        out = Text(text, style=style)
        for start, end in spans:
            out.stylize("bold yellow", start, end)
        return out

    for p in view.passages:
        console.print(Text(f"Document ({p.label or p.source})", style="italic"))
        console.print(marked(p.text, p.spans, "dim"))
        console.print()
    if view.notes:
        console.print(Text("Ce que les passages disent de chaque option", style="bold"))
    for o in view.notes:
        console.print(f"  {o.letter.upper()}. {o.option}")
        for n in o.notes:
            p = view.passages[n.passage - 1]
            console.print(
                Text(f"     ({p.label or p.source}) ").append(marked(n.text, n.spans, ""))
            )
        if not o.notes:
            console.print(Text("     rien dans les passages", style="italic"))
