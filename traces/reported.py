"""What a suite's source reports besides leaderboard scores (table ``reported_facts``, from the suite file's
``reported.facts``), read by the leaderboard page and by the analysis page alike; kept here, beside the warehouse,
so that neither app imports the other for it."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, computed_field

from ptbsite import warehouse

FACT_TOPIC_TEXT = {"score": "Score", "methods": "Methods", "training_signal": "Training signal",
                   "calibration": "Calibration", "note": "Note"}
FACT_COLUMNS = ("topic, agent, agent_name, quantity, value, value_max, out_of, unit, scope, description, quote, "
                "source")


class ReportedFact(BaseModel):
    """A figure or statement of the suite's source (table ``reported_facts``), exactly as the source gives it.

    ``topic``: score | methods | training_signal | calibration | note. ``value`` None: a statement without a
    number (e.g. "roughly a 3x improvement" is kept as a note, not a figure); ``value_max``: the upper end of a
    range; ``out_of``: "2 of 8" -> 8; ``unit``: ``fraction`` (shown as percent), ``x`` (a ratio), or a count's
    noun; ``quote``: the source's words. ``display`` (in JSON too): the figure as the pages show it.
    """

    model_config = ConfigDict(frozen=True, from_attributes=True)

    topic: str
    agent: str | None
    agent_name: str | None
    quantity: str
    value: float | None
    value_max: float | None
    out_of: float | None
    unit: str | None
    scope: str | None
    description: str
    quote: str
    source: str

    @property
    def topic_text(self) -> str:
        """The topic in words (FACT_TOPIC_TEXT), e.g. "Training signal"."""
        return FACT_TOPIC_TEXT.get(self.topic, self.topic)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def display(self) -> str:
        """The figure as text: ``30.9%``, ``4.9x``, ``0-4 steps``, ``2 of 8 trials``, ``512 rollouts``; "" for a
        statement without a number."""
        if self.value is None:
            return ""

        def number(v: float) -> str:
            return f"{v:,.0f}" if float(v).is_integer() else f"{v:g}"

        if self.unit == "fraction":
            return f"{100 * self.value:.1f}%"
        if self.unit == "x":
            return f"{number(self.value)}x"
        text = number(self.value) + (f"-{number(self.value_max)}" if self.value_max is not None else "")
        if self.out_of is not None:
            text += f" of {number(self.out_of)}"
        return f"{text} {self.unit}" if self.unit else text


def read_reported_facts(con, suite: str) -> list[ReportedFact]:
    """The suite's reported facts in the suite file's order, on an open warehouse connection."""
    cursor = con.execute(f"SELECT {FACT_COLUMNS} FROM reported_facts WHERE suite = ? ORDER BY position", [suite])
    names = [d[0] for d in cursor.description]
    return [ReportedFact(**dict(zip(names, row, strict=True))) for row in cursor.fetchall()]


@warehouse.retrying
def reported_facts(suite: str, topic: str | None = None) -> list[ReportedFact]:
    """What the suite's source reports besides leaderboard scores (``reported.facts`` of the suite file), in the
    file's order; only ``topic`` (score | methods | training_signal | calibration | note) when given."""
    with warehouse.connect() as con:
        facts = read_reported_facts(con, suite)
    return [f for f in facts if topic is None or f.topic == topic]
