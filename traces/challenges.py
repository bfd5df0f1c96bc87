"""The public's challenge of a verdict (issue 26): anyone may dispute a run's verdict on one question with a
plain-text claim and the agent-trace steps it cites; staff triage it (accept: the run page shows the question as
contested with the claim; reject with a reason; resolve with a reviewer's override, linked). Nothing a visitor
writes is shown before staff accept it. Tables ``verdict_challenges`` and ``challenge_events`` (warehouse migration
0018); the events are the audit log (append only).

Writes: :func:`submit_challenge`, :func:`triage_challenge`. Reads: ``read_public_challenges`` (the run page, one
unit of work), :func:`challenges` (staff), :func:`open_challenge_counts`.
"""
from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime, timezone

from django.conf import settings
from pydantic import BaseModel, Field

from ptbsite import warehouse
from ptbsite.query import ascii_int

from . import services
from .verdicts import KIND_TEXT, kind_text

CLAIM_MIN, CLAIM_MAX = 20, 2_000  # characters of a claim (after trimming)
STEPS_MAX = 20                    # steps one claim may cite
CONTACT_MAX = 200
ACTIONS = ("accepted", "rejected", "resolved")
STATUS_TEXT = {"open": "open (not shown to the public)", "accepted": "contested", "rejected": "rejected",
               "resolved": "resolved by a reviewer's override"}
# Control characters other than newline and tab: a claim is plain text shown as text.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class ChallengeRefused(ValueError):
    """A challenge or a triage the rules refuse; the message says which field and why."""


class ChallengeEvent(BaseModel):
    """One triage step of the audit log: ``action`` accepted | rejected | resolved, ``override_at`` the linked
    override's time (resolved), naive UTC times."""

    action: str
    reason: str
    reviewer: str
    override_at: datetime | None = None
    created_at: datetime


class Challenge(BaseModel):
    """A challenge of the verdict on ``kind`` of run ``run_id``: the visitor's ``claim`` (plain text, at most
    CLAIM_MAX characters) and cited ``steps`` (agent-trace indices), its ``status`` (open | accepted | rejected |
    resolved: the latest event's action) and ``events`` (oldest first). ``contact`` and ``address`` (a salted
    hash) are for staff: the public twin leaves them out (:meth:`public`)."""

    id: str
    run_id: str
    kind: str
    kind_text: str
    claim: str
    steps: list[int] = Field(default_factory=list)
    contact: str | None = None
    address: str = ""
    created_at: datetime
    status: str = "open"
    status_text: str = ""
    events: list[ChallengeEvent] = Field(default_factory=list)

    def public(self) -> PublicChallenge:
        """What the public sees of an accepted or resolved challenge."""
        resolved = next((e for e in reversed(self.events) if e.action == "resolved"), None)
        return PublicChallenge(id=self.id, kind=self.kind, kind_text=self.kind_text, claim=self.claim,
                               steps=self.steps, status=self.status, status_text=self.status_text,
                               created_at=self.created_at, resolution=resolved.reason if resolved else None,
                               override_at=resolved.override_at if resolved else None)


class PublicChallenge(BaseModel):
    """An accepted (``status`` accepted: the question is contested) or resolved challenge as the run page and its
    twin show it: the claim, the cited steps, and for a resolution the reviewer's reason and the override's time
    (the run's override log lists it)."""

    id: str
    kind: str
    kind_text: str
    claim: str
    steps: list[int]
    status: str
    status_text: str
    created_at: datetime
    resolution: str | None = None
    override_at: datetime | None = None


def address_hash(address: str) -> str:
    """A salted sha256 of the sender's address (the secret key is the salt): the audit can tell two challenges from
    one address apart from others without storing the address."""
    return hashlib.sha256(f"{settings.SECRET_KEY}:{address}".encode()).hexdigest()[:16]


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _questions(con, run_id: str) -> tuple[set[str], int]:
    """The questions a challenge of the run may name (the scored ones and every question a judge answered) and its
    agent-trace step count. Raises services.UnknownRun."""
    row = con.execute("SELECT step_count FROM runs WHERE id = ?", [run_id]).fetchone()
    if row is None:
        raise services.UnknownRun(f"no run {run_id}")
    kinds = {r[0] for r in con.execute("SELECT DISTINCT kind FROM verdicts WHERE run_id = ?", [run_id]).fetchall()}
    return kinds | {"contamination", "disallowed_model", "disallowed_api_usage"}, int(row[0] or 0)


def validate(*, kind: str, claim: str, steps: list[int] | str, contact: str | None, questions: set[str],
             step_count: int) -> tuple[str, list[int], str | None]:
    """The cleaned (claim, steps, contact) of a challenge, or ChallengeRefused naming the field.

    ``steps``: a list of step indices or a text of them separated by commas or spaces (``"12, 40"``); each must be
    a step of the agent's trace (0 .. step_count - 1), at most STEPS_MAX, kept in order without repeats."""
    if kind not in questions:
        raise ChallengeRefused(f"question: {kind!r} is not a question of this run "
                               f"({', '.join(sorted(kind_text(k) for k in questions))})")
    text = _CONTROL.sub("", (claim or "").replace("\r\n", "\n")).strip()
    if len(text) < CLAIM_MIN:
        raise ChallengeRefused(f"claim: at least {CLAIM_MIN} characters, saying what the judge missed or got wrong")
    if len(text) > CLAIM_MAX:
        raise ChallengeRefused(f"claim: at most {CLAIM_MAX} characters (this one has {len(text)})")
    if isinstance(steps, str):
        parts = [p for p in re.split(r"[\s,]+", steps.strip()) if p]
        numbers = [ascii_int(p) for p in parts]
        if None in numbers:
            raise ChallengeRefused("steps: step numbers separated by commas, e.g. 12, 40")
        steps = [n for n in numbers if n is not None]
    cited = list(dict.fromkeys(steps))
    if len(cited) > STEPS_MAX:
        raise ChallengeRefused(f"steps: at most {STEPS_MAX}")
    wrong = [s for s in cited if not isinstance(s, int) or isinstance(s, bool) or not 0 <= s < step_count]
    if wrong:
        raise ChallengeRefused(f"steps: {', '.join(map(str, wrong))} not a step of this run's trace "
                               f"(0 to {step_count - 1})" if step_count else "steps: this run has no trace steps")
    cleaned_contact = _CONTROL.sub("", contact or "").strip() or None
    if cleaned_contact and len(cleaned_contact) > CONTACT_MAX:
        raise ChallengeRefused(f"contact: at most {CONTACT_MAX} characters")
    return text, cited, cleaned_contact


def submit_challenge(*, run_id: str, kind: str, claim: str, steps: list[int] | str, contact: str | None,
                     address: str) -> Challenge:
    """Store a visitor's challenge (status open: shown to staff only) and return it.

    Raises:
        services.UnknownRun: no such run. ChallengeRefused: a field the rules refuse (:func:`validate`).
    """
    now = _now()
    challenge_id = secrets.token_hex(8)

    def write(con) -> Challenge:
        questions, step_count = _questions(con, run_id)
        text, cited, reach = validate(kind=kind, claim=claim, steps=steps, contact=contact, questions=questions,
                                      step_count=step_count)
        con.execute("INSERT INTO verdict_challenges VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [challenge_id, run_id, kind, text, ",".join(map(str, cited)), reach, address_hash(address), now])
        return Challenge(id=challenge_id, run_id=run_id, kind=kind, kind_text=kind_text(kind), claim=text,
                         steps=cited, contact=reach, address=address_hash(address), created_at=now,
                         status="open", status_text=STATUS_TEXT["open"])

    return warehouse.run_in_transaction(write)


def triage_challenge(*, challenge_id: str, action: str, reason: str, reviewer: str,
                     flagged: bool | None = None) -> Challenge:
    """A reviewer's decision on a challenge, appended to its audit log: ``accepted`` (the public sees it as
    contested), ``rejected`` (with a reason; never shown), ``resolved`` (with ``flagged``: the reviewer's override
    of the challenged question, made through services.override_verdict in the same decision and linked by its
    time). Returns the challenge after it.

    Raises:
        ChallengeRefused: unknown challenge or action, no reason or reviewer, a resolution without ``flagged``, or
            of a question no override can change. services.UnknownRun: the run is gone.
    """
    if action not in ACTIONS:
        raise ChallengeRefused(f"action: one of {', '.join(ACTIONS)}")
    if not reason.strip() or not reviewer.strip():
        raise ChallengeRefused("reason: a triage needs a written reason and a reviewer")
    found = challenges(ids=[challenge_id])
    if not found:
        raise ChallengeRefused(f"no challenge {challenge_id}")
    challenge = found[0]
    override_at = None
    if action == "resolved":
        if flagged is None:
            raise ChallengeRefused("flagged: a resolution overrides the verdict: say flagged or clean")
        try:
            row = services.override_verdict(run_id=challenge.run_id, kind=challenge.kind, flagged=flagged,
                                            reason=f"challenge {challenge.id}: {reason.strip()}", reviewer=reviewer)
        except ValueError as exc:
            raise ChallengeRefused(str(exc)) from None
        override_at = row["created_at"]

    def write(con) -> None:
        con.execute("INSERT INTO challenge_events VALUES (?, ?, ?, ?, ?, ?)",
                    [challenge.id, action, reason.strip(), reviewer, override_at, _now()])

    warehouse.run_in_transaction(write)
    return challenges(ids=[challenge_id])[0]


def read_challenges(con, *, run_id: str | None = None, ids: list[str] | None = None,
                    status: str | None = None, run_ids: list[str] | None = None) -> list[Challenge]:
    """Challenges (every field, for staff) of one run (or of the runs ``run_ids``), or with the given ids, or all;
    newest first; ``status`` keeps those whose latest event says it (``open``: none yet)."""
    where: list[str] = []
    params: list = []
    if run_id is not None:
        where.append("c.run_id = ?")
        params.append(run_id)
    if run_ids is not None:
        where.append("c.run_id = ANY(?::VARCHAR[])")
        params.append(run_ids)
    if ids is not None:
        where.append(f"c.id IN ({', '.join('?' * len(ids))})" if ids else "false")
        params += ids
    rows = con.execute(
        "SELECT c.id, c.run_id, c.kind, c.claim, c.steps, c.contact, c.address, c.created_at FROM verdict_challenges c"
        + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY c.created_at DESC, c.id", params).fetchall()
    events: dict[str, list[ChallengeEvent]] = {r[0]: [] for r in rows}
    if rows:
        for cid, action, reason, reviewer, override_at, created_at in con.execute(
                "SELECT e.challenge_id, e.action, e.reason, e.reviewer, e.override_at, e.created_at "
                "FROM challenge_events e JOIN verdict_challenges c ON c.id = e.challenge_id"
                + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY e.created_at", params).fetchall():
            events[cid].append(ChallengeEvent(action=action, reason=reason, reviewer=reviewer,
                                              override_at=override_at, created_at=created_at))
    out = []
    for cid, run, kind, claim, steps, contact, address, created_at in rows:
        state = events[cid][-1].action if events[cid] else "open"
        if status is not None and state != status:
            continue
        out.append(Challenge(id=cid, run_id=run, kind=kind, kind_text=KIND_TEXT.get(kind, kind_text(kind)),
                             claim=claim, steps=[int(s) for s in steps.split(",") if s], contact=contact,
                             address=address, created_at=created_at, status=state, status_text=STATUS_TEXT[state],
                             events=events[cid]))
    return out


@warehouse.retrying
def challenges(*, run_id: str | None = None, ids: list[str] | None = None,
               status: str | None = None) -> list[Challenge]:
    """:func:`read_challenges` in its own unit of work (the staff triage page)."""
    with warehouse.connect() as con:
        return read_challenges(con, run_id=run_id, ids=ids, status=status)


@warehouse.once.read_once
def read_public_challenges(con, run_id: str) -> list[PublicChallenge]:
    """The run's challenges the public may see: accepted (contested) and resolved ones, newest first."""
    return [c.public() for c in read_challenges(con, run_id=run_id) if c.status in ("accepted", "resolved")]


def read_public_challenges_of(con, run_ids: list[str]) -> dict[str, list[PublicChallenge]]:
    """{run id: :func:`read_public_challenges`} of ``run_ids`` (every id a key), in two queries."""
    out: dict[str, list[PublicChallenge]] = {run_id: [] for run_id in run_ids}
    for c in read_challenges(con, run_ids=run_ids):
        if c.status in ("accepted", "resolved"):
            out[c.run_id].append(c.public())
    return out


def contested(challenges_: list[PublicChallenge]) -> dict[str, list[PublicChallenge]]:
    """Accepted challenges by question (what makes a question "contested" on the run page)."""
    out: dict[str, list[PublicChallenge]] = {}
    for c in challenges_:
        if c.status == "accepted":
            out.setdefault(c.kind, []).append(c)
    return out


__all__ = ["ACTIONS", "CLAIM_MAX", "CLAIM_MIN", "STEPS_MAX", "Challenge", "ChallengeEvent", "ChallengeRefused",
           "PublicChallenge", "challenges", "contested", "read_challenges", "read_public_challenges",
           "submit_challenge", "triage_challenge", "validate"]
