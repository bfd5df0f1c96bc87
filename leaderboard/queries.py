"""The query of each leaderboard and plot page: one model a page, read by the page's view and by its JSON twin in
``leaderboard.api`` (Datasette's rule: a page and its twin answer the same query with the same data).

The twin takes the model as django-ninja query parameters and answers 422 for a value outside its choices; the
page reads it from its URL with :meth:`PageQuery.from_url`, which leaves such a value at its default (a shared
link with a stale parameter still opens). An empty value (a form's unset field, hence "" among the choices) is
its default on both. A suite
with no file is a 404 on both (:meth:`PageQuery.known`).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Self

from django.conf import settings
from ninja import Schema
from pydantic import ValidationError, model_validator

from ptbsite.suites import suite_ids

from . import selectors

JudgingRule = Literal["era", "any", "majority", "ignore"]  # traces.verdicts.JUDGING_RULES


class UnknownSuite(LookupError):
    """A ``suite`` parameter that names no suite file."""


class PageQuery(Schema):
    """A page's query: ``suite`` (a suite id, default the site's), read the same way by the page and its twin."""

    suite: str = settings.DEFAULT_SUITE

    @model_validator(mode="after")
    def _empty_is_default(self) -> Self:
        """An empty parameter (a form's unset field) takes its default."""
        for name, field in type(self).model_fields.items():
            if getattr(self, name) == "":
                setattr(self, name, field.default)
        return self

    @classmethod
    def from_url(cls, params: Mapping[str, str]) -> Self:
        """The query from a page's URL parameters: each field given and valid, the others at their defaults."""
        given = {name: params[name] for name in cls.model_fields if params.get(name)}
        try:
            return cls.model_validate(given)
        except ValidationError as exc:
            bad = {str(error["loc"][0]) for error in exc.errors() if error["loc"]}
            return cls.model_validate({name: value for name, value in given.items() if name not in bad})

    def known(self) -> Self:
        """The query itself; raises UnknownSuite when ``suite`` has no suite file."""
        if self.suite not in suite_ids():
            raise UnknownSuite(f"no suite {self.suite}")
        return self


class PlotQuery(PageQuery):
    """The query of ``/plots/time-vs-score/``, ``/plots/time-spent/``, ``/plots/budget-and-effort/`` and their
    twins: the suite alone."""


class PerBenchmarkQuery(PageQuery):
    """``/plots/per-benchmark/``: the suite and one ``base_model`` id (None: the mean over the suite's)."""

    base_model: str | None = None


class UsageQuery(PageQuery):
    """``/plots/usage-vs-score/``: the suite and the judging rule of the scores from runs (``verdicts``, and
    ``reviews`` ``1``: reviewers' overrides on top), as on the leaderboard."""

    verdicts: JudgingRule | Literal[""] = "era"
    reviews: Literal["0", "1", ""] = "1"


class LeaderboardQuery(PageQuery):
    """The leaderboard's view (``/``, ``/leaderboard/table`` and ``/api/leaderboard``): ``base_model`` ("" for the
    average), ``sort`` (``rank``, ``agent``, ``average``, ``runs`` or a benchmark id) and ``dir``, ``source``,
    ``facet`` ("" for none), the judging rule (``verdicts``, ``reviews``) and ``flags``: ``ignore`` is the old name
    of ``verdicts=ignore&reviews=0`` (the raw scores) and is set exactly for that view, ``apply`` otherwise."""

    base_model: str = ""
    sort: str = "rank"
    dir: Literal["asc", "desc", ""] = "asc"
    source: Literal["published", "runs", "all", ""] = "published"
    flags: Literal["apply", "ignore", ""] = "apply"
    facet: str = ""
    verdicts: JudgingRule | Literal[""] = "era"
    reviews: Literal["0", "1", ""] = "1"

    @model_validator(mode="after")
    def _raw_view(self) -> Self:
        if self.flags == "ignore":  # the flag-blind view's old name: no judge and no reviewer
            self.verdicts, self.reviews = "ignore", "0"
        self.flags = "ignore" if (self.verdicts, self.reviews) == ("ignore", "0") else "apply"
        return self

    def board(self) -> selectors.Leaderboard:
        """The leaderboard this view shows (:func:`leaderboard.selectors.leaderboard`). Raises
        selectors.UnknownBaseModel for a base model not in the suite, ValueError for a facet it cannot read."""
        return selectors.leaderboard(
            suite=self.suite, base_model=self.base_model or None, sort=self.sort, direction=self.dir,
            source=self.source, facet=self.facet or None, verdicts=self.verdicts, reviews=self.reviews == "1")
